# The CMake package (after every layer, once the targets of the export set exist):
# <prefix>/lib/cmake/Tessera/{TesseraConfig,TesseraConfigVersion,TesseraTargets}.cmake when
# installed, and the same in the build tree, so `find_package(Tessera 0.1 REQUIRED)` works from
# either. Before 1.0 a minor version may change the ABI: only the same MAJOR.MINOR matches.
include(CMakePackageConfigHelpers)
set(TSR_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/TesseraConfig.cmake INSTALL_DESTINATION ${TSR_CMAKE_PACKAGE_DIR})
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${TSR_CMAKE_PACKAGE_DIR} COMPONENT dev)
install(FILES ${CMAKE_BINARY_DIR}/TesseraConfig.cmake ${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
        DESTINATION ${TSR_CMAKE_PACKAGE_DIR} COMPONENT dev)
export(EXPORT TesseraTargets NAMESPACE Tessera:: FILE ${CMAKE_BINARY_DIR}/TesseraTargets.cmake)
