"""Run every benchmark, each in its own process (no run inherits another's memory or warm caches): `make bench`."""
import subprocess
import sys

BENCHMARKS = ("engine", "cache_timing", "memory", "startup")


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"\n== bench.{name} ==", flush=True)
        if subprocess.run([sys.executable, "-m", f"bench.{name}"]).returncode:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
