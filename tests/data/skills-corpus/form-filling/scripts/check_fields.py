import sys

missing = [l for l in open(sys.argv[1]) if l.rstrip().endswith(":")]
print(f"{len(missing)} fields empty")
sys.exit(1 if missing else 0)
