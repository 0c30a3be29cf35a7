# TSR_PYTHON: the interpreter the Python and torch checks (and the layer check) run with.
# Debian's /usr/bin/python3 first: it has python3-numpy and python3-torch from apt, where a
# python3 earlier on PATH (pyenv, a virtualenv) may have neither, and then every Python check
# would be left out. One lookup for the whole build: find_program caches its first answer.
find_program(TSR_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT TSR_PYTHON)
  find_program(TSR_PYTHON NAMES python3)
endif()
