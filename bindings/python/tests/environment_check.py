"""The job secret leaves the environment once a communicator has read it: run under tsrun
(tsrun -np N python3 environment_check.py). Neither os.environ nor a program the rank starts
has it afterwards, and a second communicator of the same process still finds it."""
import os
import subprocess

import tessera
from checks import Checks


def main():
    c = Checks()
    c.expect(len(os.environ.get("TSR_JOB_SECRET", "")) >= 16, "tsrun gave no job secret")
    comm = tessera.Communicator()
    c.expect("TSR_JOB_SECRET" not in os.environ, "os.environ still holds TSR_JOB_SECRET")
    child = subprocess.run(["sh", "-c", "echo ${TSR_JOB_SECRET-unset}"], capture_output=True, text=True)
    c.expect(child.stdout.strip() == "unset", f"a child process inherited the secret: {child.stdout.strip()!r}")
    rank, size = comm.rank, comm.size
    comm.barrier()
    comm.close()
    again = tessera.Communicator()  # the library kept the secret for this one
    again.barrier()
    again.close()
    c.finish(rank, size, "environment_check")


if __name__ == "__main__":
    main()
