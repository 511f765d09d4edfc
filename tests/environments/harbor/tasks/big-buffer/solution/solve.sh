#!/bin/bash
python -c '
b = bytearray(b"x") * (2560 * 1024 * 1024)
open("/app/size.txt", "w").write(str(len(b)))
'
