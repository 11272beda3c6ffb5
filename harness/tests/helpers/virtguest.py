"""virtguest.py - drive one virtual board (boards/virt/qemu-run.sh) on its
serial console from a test or a bench: boot, log in as root, run shell
commands and get their output and exit status.  Shared by the virt_*
scenarios and bench/vemmc-powerfail.sh."""
import os
import re
import select
import subprocess
import sys
import time


class Guest:
    def __init__(self, run, kernel, initrd, append, media=None, mem=512):
        args = [run, "--kernel", kernel, "--initrd", initrd, "--append", append,
                "--mem", str(mem)]
        if media:
            args += ["--media", media]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.buf = b""
        self.log = b""

    def expect(self, pat, tmo):
        end = time.time() + tmo
        while True:
            # the match may already be in what was read (one chunk can hold two markers)
            m = re.search(pat, self.buf)
            if m:
                out, self.buf = self.buf[:m.start()], self.buf[m.end():]
                return out.decode(errors="replace"), m
            if time.time() >= end:
                break
            if select.select([self.p.stdout], [], [], 0.5)[0]:
                d = os.read(self.p.stdout.fileno(), 65536)
                if not d:
                    break
                self.buf += d
                self.log += d
        self.kill()
        sys.exit("timeout waiting for %r; last output: %r" % (pat, self.log[-600:]))

    def login(self, tmo=240):
        out, _ = self.expect(rb"login: ", tmo)
        self.p.stdin.write(b"root\n")
        self.p.stdin.flush()
        self.expect(rb"# ", 30)
        return out

    def sh(self, cmd, tmo=120):
        """Run cmd; returns (output, exit status)."""
        # the console echoes (and may wrap) the command line: the markers
        # are spelt so that only their output matches
        self.p.stdin.write(('echo @@B""@@; %s; echo @@RC=$?@@\n' % cmd).encode())
        self.p.stdin.flush()
        self.expect(rb"@@B@@\r?\n", tmo)
        out, m = self.expect(rb"@@RC=(\d+)@@", tmo)
        return out.replace("\r", ""), int(m.group(1))

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
