import sys

for line in open(sys.argv[1]):
    if ":" in line:
        print(line.split(":", 1)[0].strip())
