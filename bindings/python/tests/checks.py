"""What the Python checks share: collecting failed checks on this rank, and ending with them."""
import sys


class Checks:
    def __init__(self):
        self.failures = []
        self.count = 0

    def expect(self, condition, what):
        """Records a failure unless condition holds; returns whether it held."""
        self.count += 1
        if not condition:
            self.failures.append(what)
        return bool(condition)

    def raises(self, kind, needle, fn, what):
        """fn() must raise `kind` with `needle` in its message."""
        try:
            fn()
        except kind as e:
            self.expect(needle in str(e), f"{what}: message {str(e)!r} lacks {needle!r}")
            return
        except Exception as e:  # the wrong kind
            self.expect(False, f"{what}: raised {type(e).__name__}: {e}")
            return
        self.expect(False, f"{what}: did not raise {kind.__name__}")

    def finish(self, rank, size, name):
        """Prints this rank's failures (rank 0 a summary when none) and exits with the result."""
        for f in self.failures:
            print(f"rank {rank}: FAILED: {f}", flush=True)
        if rank == 0 and not self.failures:
            print(f"{name}: {self.count} checks passed on {size} ranks", flush=True)
        sys.exit(1 if self.failures else 0)
