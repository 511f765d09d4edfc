#!/bin/bash
if getent hosts deb.debian.org >/dev/null; then echo online; else echo offline; fi > /app/net.txt
