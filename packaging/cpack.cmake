# Install layout and the Debian package (cpack -G DEB in a configured tree;
# packaging/deb-test.sh builds, installs, checks and purges it).
#   /usr/bin/drainwise
#   /lib/systemd/system/drainwise.service
#   /etc/drainwise/drainwise.json, /etc/drainwise/policy.json   (conffiles)
#   /usr/share/doc/drainwise/                                     (README, docs, openapi.yaml)
#   /var/lib/drainwise                                            (created by postinst / StateDirectory=)
# The binary's own rule is in src/app/CMakeLists.txt; the destinations below
# that start with / are absolute on purpose: systemd and /etc do not move
# with the install prefix.
set(_pkg ${PROJECT_SOURCE_DIR}/packaging)

install(FILES ${_pkg}/drainwise.service DESTINATION /lib/systemd/system)
install(FILES ${_pkg}/drainwise.json DESTINATION /etc/drainwise)
install(FILES ${PROJECT_SOURCE_DIR}/policies/default.json DESTINATION /etc/drainwise RENAME policy.json)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/openapi.yaml DESTINATION share/doc/drainwise)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/drainwise/docs FILES_MATCHING PATTERN "*.md")
install(FILES ${_pkg}/alerts/drainwise-link-health.rules.yml DESTINATION share/drainwise/alerts)

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "drainwise")
set(CPACK_PACKAGE_VENDOR "drainwise")
set(CPACK_PACKAGE_CONTACT "drainwise maintainers <drainwise@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "what a switch drain will do to the AI jobs on a Clos fabric")
set(CPACK_PACKAGE_DESCRIPTION "drainwise is a daemon and CLI that assesses a proposed switch or link drain
against the AI training jobs running on a Clos fabric (job- and flow-level
simulation), gates it with a policy and keeps an audit trail in SQLite.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # drainwise_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://drainwise.dev")
# postinst creates the user with adduser; the rest comes from the binary's
# shared libraries.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
find_program(DRAINWISE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DRAINWISE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  # Debian 12's runtime libraries of the build-time -dev packages.
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
         ", libsqlite3-0 (>= 3.40), libssl3 (>= 3.0), libspdlog1.10, libfmt9, libstdc++6 (>= 12), libc6 (>= 2.36)")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${_pkg}/debian/postinst ${_pkg}/debian/prerm ${_pkg}/debian/postrm ${_pkg}/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/;/\\\\.git/")

include(CPack)
