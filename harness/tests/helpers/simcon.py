#!/usr/bin/env python3
"""simcon.py - drive a simulated board's console (a pty, a TCP console or a Unix socket) from tests.

usage: simcon.py (--tty PATH | --tcp HOST:PORT | --unix PATH) [--timeout S] [--log FILE] STEP...
steps:
  send:TEXT       write TEXT (Python escapes: \\r \\n \\x03)
  slow:TEXT       write TEXT one character every 2 ms
  expect:REGEX    wait until REGEX matches the output received since the last match
  absent:REGEX:S  fail if REGEX shows up within S seconds
  sleep:S         wait S seconds (reading)
  run:CMD         run a shell command (e.g. curl to the power API); must exit 0
  crc             every @@emmclab line received so far must carry a valid CRC
  badcrc          at least one @@emmclab line received so far has a bad CRC
  crctail:N       the last N @@emmclab lines received carry valid CRCs
Exit 0 when every step passed, 1 (with the transcript on stderr) otherwise.
"""
import os, re, select, socket, subprocess, sys, termios, time, tty, zlib

def main():
    args = sys.argv[1:]
    path = tcp = unix = log = None
    timeout = 10.0
    while args and args[0].startswith('--'):
        o = args.pop(0)
        if o == '--tty': path = args.pop(0)
        elif o == '--tcp': tcp = args.pop(0)
        elif o == '--unix': unix = args.pop(0)
        elif o == '--timeout': timeout = float(args.pop(0))
        elif o == '--log': log = args.pop(0)
        else: sys.exit('bad option ' + o)
    if tcp or unix:
        if unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(unix)
        else:
            host, port = tcp.rsplit(':', 1)
            s = socket.create_connection((host, int(port)), timeout=5)
        s.setblocking(False)
        fd = s.fileno()
        wr = lambda b: s.sendall(b)
    else:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(fd)
        termios.tcflush(fd, termios.TCIFLUSH)
        wr = lambda b: os.write(fd, b)
    buf = b''
    mark = 0
    def read_for(sec):
        nonlocal buf
        end = time.monotonic() + sec
        while True:
            left = end - time.monotonic()
            if left <= 0: return
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    d = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    d = b''
                if d: buf += d
                else: time.sleep(0.01)
    def fail(msg):
        sys.stderr.write('simcon: FAIL: %s\n--- received ---\n%s\n--- end ---\n' %
                         (msg, buf.decode('utf-8', 'replace')))
        if log: open(log, 'wb').write(buf)
        sys.exit(1)
    def proto_lines():
        out = []
        for line in buf.replace(b'\r', b'').split(b'\n'):
            i = line.find(b'@@emmclab ')
            if i < 0: continue
            line = line[i:]
            j = line.rfind(b' crc=')
            if j < 0: continue
            out.append((line, zlib.crc32(line[:j]) & 0xffffffff == int(line[j+5:j+13] or b'0', 16)))
        return out
    for step in args:
        kind, _, arg = step.partition(':')
        if kind in ('send', 'slow'):
            data = arg.encode().decode('unicode_escape').encode('latin-1')
            if kind == 'send': wr(data)
            else:
                for ch in data:
                    wr(bytes([ch])); read_for(0.002)
        elif kind == 'expect':
            rx = re.compile(arg.encode(), re.S)
            end = time.monotonic() + timeout
            while True:
                m = rx.search(buf, mark)
                if m:
                    mark = m.end(); break
                if time.monotonic() > end: fail('timeout waiting for %r' % arg)
                read_for(0.02)
        elif kind == 'absent':
            pat, _, sec = arg.rpartition(':')
            read_for(float(sec))
            if re.search(pat.encode(), buf[mark:], re.S): fail('unexpected %r' % pat)
        elif kind == 'run':
            if subprocess.call(arg, shell=True, stdout=subprocess.DEVNULL) != 0:
                fail('command failed: ' + arg)
        elif kind == 'sleep':
            read_for(float(arg))
        elif kind == 'crc':
            pl = proto_lines()
            if not pl: fail('no protocol lines')
            bad = [l for l, ok in pl if not ok]
            if bad: fail('bad CRC: %r' % bad[0])
        elif kind == 'crctail':
            pl = proto_lines()[-int(arg):]
            if len(pl) < int(arg) or not all(ok for _, ok in pl): fail('bad CRC in the last %s lines' % arg)
        elif kind == 'badcrc':
            if all(ok for _, ok in proto_lines()): fail('no line with a bad CRC')
        else:
            fail('bad step ' + step)
    if log: open(log, 'wb').write(buf)
    sys.stdout.write(buf.decode('utf-8', 'replace'))

if __name__ == '__main__':
    main()
