# The Python package's layout, when scikit-build-core builds it (`pip install .`, pyproject.toml
# sets SKBUILD and installs only the component "wheel"): the package `tessera` at the wheel's
# root, libtessera in tessera/_lib/ under its SONAME (a wheel keeps no symlinks), the torch
# backend of the interpreter pip runs (when it has torch) in tessera/torch/<torch version>/,
# and tsrun and the tools in the environment's bin/.
if(NOT SKBUILD)
  return()
endif()
set(TSR_WHEEL_LIB_NAME libtessera.so.${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
install(FILES $<TARGET_FILE:tessera> DESTINATION tessera/_lib RENAME ${TSR_WHEEL_LIB_NAME} COMPONENT wheel)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/python/tessera DESTINATION . COMPONENT wheel
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
foreach(tool tsrun tsr-info tsr-check tsr-topo tsr-bench)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR} COMPONENT wheel)
  endif()
endforeach()
