# The Python package in the install tree, and the Debian package (CPack).
#
# `cmake --install` puts python/tickwire in TW_PYTHON_INSTALL_DIR (under the
# prefix) with a _paths.py naming the library and the program relative to
# it, so the installed tree stays relocatable.  `cpack -G DEB` makes
# tickwire_VERSION_ARCH.deb for /usr: Depends from dpkg-shlibdeps (the
# library, the modules, the program) plus python3 and python3-numpy.

set(TW_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where `cmake --install` puts the Python package (relative to the prefix)")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/tickwire DESTINATION ${TW_PYTHON_INSTALL_DIR}
        PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
# Paths relative to the installed package directory (the prefix cancels).
file(RELATIVE_PATH _tw_py_lib "/P/${TW_PYTHON_INSTALL_DIR}/tickwire"
     "/P/${CMAKE_INSTALL_LIBDIR}/libtickwire.so.0")
file(RELATIVE_PATH _tw_py_bin "/P/${TW_PYTHON_INSTALL_DIR}/tickwire"
     "/P/${CMAKE_INSTALL_BINDIR}/tickwire")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/_paths.py CONTENT
"\"\"\"Where `cmake --install` put the library and the program, relative to this
package's directory (written by cmake/package.cmake).\"\"\"
LIB = \"${_tw_py_lib}\"
BIN = \"${_tw_py_bin}\"
")
install(FILES ${CMAKE_BINARY_DIR}/generated/_paths.py
        DESTINATION ${TW_PYTHON_INSTALL_DIR}/tickwire)
install(FILES ${CMAKE_SOURCE_DIR}/docs/install.md DESTINATION ${CMAKE_INSTALL_DOCDIR} OPTIONAL)

set(CPACK_PACKAGE_NAME tickwire)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tickwire maintainers <tickwire@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "low-latency trading toolkit: backtest sweeps, engine, userspace TCP/IP, FIX")
set(CPACK_PACKAGE_DESCRIPTION
    "The tickwire program (sweep, serve, study, bench, exchange, trade, gen), the C library
libtickwire (shared and static, headers, pkg-config), its DPDK and AF_XDP port modules,
the Python package tickwire for /usr/bin/python3, a man page and bash completion.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-numba, python3-matplotlib, python3-pandas, python3-distributed")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/cmake/deb/postinst ${CMAKE_SOURCE_DIR}/cmake/deb/prerm
    ${CMAKE_SOURCE_DIR}/cmake/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_GENERATOR DEB)
include(CPack)
