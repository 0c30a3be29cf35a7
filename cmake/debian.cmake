# Debian packages (`cpack -G DEB` in the build folder, or `cpack --config build/CPackConfig.cmake`):
#   tessera      the library, tsrun and the tools, the Python package (in /usr/lib/tessera/python,
#                put on Debian's python3 path by a .pth file)
#   tessera-dev  the C headers, the pkg-config file and the CMake package
#   tessera-sim  tsr-sim (it alone needs SimGrid)
# installed under /usr; their Depends come from the ELF files (dpkg-shlibdeps). The torch backend
# is not packaged: it is built against a user's own torch (scripts/build_torch_backend.sh, pip).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tessera)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "peer-to-peer dense and compressed collectives on UCX")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev debian-python sim)
set(CPACK_STRIP_FILES ON)
# One package per group: the .pth file goes with the runtime.
set(CPACK_COMPONENT_RUNTIME_GROUP tessera)
set(CPACK_COMPONENT_DEBIAN-PYTHON_GROUP tessera)
set(CPACK_COMPONENT_DEV_GROUP tessera-dev)
set(CPACK_COMPONENT_SIM_GROUP tessera-sim)
set(CPACK_DEBIAN_TESSERA-SIM_PACKAGE_NAME tessera-sim)
set(CPACK_DEBIAN_TESSERA_PACKAGE_NAME tessera)
set(CPACK_DEBIAN_TESSERA-DEV_PACKAGE_NAME tessera-dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Tessera developers <tessera-dev@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_TESSERA_PACKAGE_RECOMMENDS "python3, python3-numpy")
set(CPACK_DEBIAN_TESSERA-DEV_PACKAGE_DEPENDS "tessera (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_TESSERA-DEV_PACKAGE_SECTION libdevel)
# Only the tessera package's Python finds the package through this file (a component of its
# own, left out of a plain `cmake --install`).
file(WRITE ${CMAKE_BINARY_DIR}/tessera.pth "${CPACK_PACKAGING_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/tessera/python\n")
install(FILES ${CMAKE_BINARY_DIR}/tessera.pth DESTINATION lib/python3/dist-packages COMPONENT debian-python
        EXCLUDE_FROM_ALL)
include(CPack)
