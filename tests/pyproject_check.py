"""pyproject_check.py SOURCE_DIR VERSION TARGET...: `pip install .` builds what this project
is: the version scikit-build-core reads from CMakeLists.txt with pyproject.toml's regex is the
project's VERSION, every target it builds exists (the TARGETs given are ones CMake knows), and
the wheel takes cmake/wheel.cmake's component. The whole pip install is
tests/pip_install_check.sh (full tier)."""
import pathlib
import re
import sys
import tomllib

src, version, known = pathlib.Path(sys.argv[1]), sys.argv[2], set(sys.argv[3:])
config = tomllib.loads((src / "pyproject.toml").read_text())
failures = []
skb = config["tool"]["scikit-build"]
pattern = skb["metadata"]["version"]["regex"]
match = re.search(pattern, (src / skb["metadata"]["version"]["input"]).read_text())
if not match or match.group("value") != version:
    failures.append(f"the version pip reads is {match and match.group('value')!r}, the project's {version}")
if "version" not in config["project"].get("dynamic", []):
    failures.append("project.version is not dynamic (read from CMake)")
targets = skb["build"]["targets"]
for wanted in ("tessera", "tsrun", "tessera_torch"):
    if wanted not in targets:
        failures.append(f"build.targets leaves out {wanted}")
    if wanted not in known:
        failures.append(f"CMake has no target {wanted}")
components = skb["install"]["components"]
wheel_cmake = (src / "cmake" / "wheel.cmake").read_text()
for component in components:
    if f"COMPONENT {component}" not in wheel_cmake:
        failures.append(f"install.components names {component}, which cmake/wheel.cmake does not install")
for f in failures:
    print("FAILED:", f)
print("pyproject.toml follows the project" if not failures else "")
sys.exit(1 if failures else 0)
