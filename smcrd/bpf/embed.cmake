# embed.cmake - turns a file into a C array, so that smcrd carries its BPF
# object inside (no loose file to install or lose).
#
#   cmake -DINPUT=file -DOUTPUT=file.c -DSYMBOL=name -P embed.cmake
#
# defines "const unsigned char name[]" and "const size_t name_size".

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x..," 16 row)                  # CMake regexes have no {16}
string(REGEX REPLACE "(${row})" "\\1\n" bytes "${bytes}")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}"
"/* Generated from ${name} by smcrd/bpf/embed.cmake: do not edit. */
#include <stddef.h>

const unsigned char ${SYMBOL}[] __attribute__((aligned(8))) = {
${bytes}
};
const size_t ${SYMBOL}_size = ${size};
")
