#!/usr/bin/env python3
"""uboot_rom_env.py - a copy of a U-Boot ROM with its built-in default environment changed.

    uboot_rom_env.py IN OUT NAME=VALUE ...   (NAME= alone deletes NAME)

Debian's qemu-x86 U-Boot keeps no environment ("Loading Environment from
nowhere"), so a board whose U-Boot boots by itself (bootdelay=-2) can only be
made by changing the default environment compiled into the image: a block of
NUL-terminated name=value strings ending in an empty one, with no checksum.
The block is rewritten in place (same offset, never longer: variables the
test does not need are dropped, longest first, to make room); the image size
does not change.
"""
import sys


def main():
    src, dst, changes = sys.argv[1], sys.argv[2], sys.argv[3:]
    img = bytearray(open(src, "rb").read())
    start = img.find(b"arch=x86\0")
    if start < 0:
        sys.exit("uboot_rom_env: no default environment (arch=x86) in " + src)
    end = img.find(b"\0\0", start)
    block = bytes(img[start:end + 1])
    env = {}
    order = []
    for kv in block.split(b"\0"):
        if not kv:
            continue
        k, _, v = kv.partition(b"=")
        env[k] = v
        order.append(k)
    want = {}
    for c in changes:
        k, _, v = c.encode().partition(b"=")
        want[k] = v
    for k, v in want.items():
        if v:
            if k not in env:
                order.append(k)
            env[k] = v
        elif k in env:
            del env[k]
            order.remove(k)

    def size():
        return sum(len(k) + 1 + len(env[k]) + 1 for k in order) + 1

    # room: drop the distro-boot scripts we do not use, longest first
    droppable = sorted((k for k in order if k not in want and k not in
                        (b"arch", b"board", b"bootargs", b"kernel_addr_r", b"ramdisk_addr_r",
                         b"loadaddr", b"stdin", b"stdout", b"stderr", b"ethaddr", b"baudrate",
                         b"fdtcontroladdr")),
                       key=lambda k: -len(env[k]))
    while size() > len(block) + 1 and droppable:
        k = droppable.pop(0)
        del env[k]
        order.remove(k)
    if size() > len(block) + 1:
        sys.exit("uboot_rom_env: the new environment does not fit")
    new = b"".join(k + b"=" + env[k] + b"\0" for k in order) + b"\0"
    new += b"\0" * (len(block) + 1 - len(new))
    img[start:start + len(new)] = new
    open(dst, "wb").write(img)


if __name__ == "__main__":
    main()
