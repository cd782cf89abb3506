#!/bin/sh
# A small script: what a script task commonly runs (a few shell built-ins
# and one program), its output naming the item.
echo "item $1 on $(uname -n)"
