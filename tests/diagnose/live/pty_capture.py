"""Runs a command on a pseudo-terminal and saves what the terminal shows: stdout and stderr
interleaved in the order written, line-buffered as on a real terminal (isatty() is true).
The terminal does not turn "\n" into "\r\n" (what a user copies from the screen), and is
120 columns wide. usage: pty_capture.py OUTFILE COMMAND [ARG...]; exits with the command's
status (128+N when killed by signal N)."""
import fcntl
import os
import pty
import struct
import sys
import termios

out_path, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    attrs = termios.tcgetattr(0)
    attrs[1] &= ~termios.ONLCR
    termios.tcsetattr(0, termios.TCSANOW, attrs)
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    os.execvp(argv[0], argv)
with open(out_path, "wb") as out:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every process holding the terminal has closed it
            break
        if not chunk:
            break
        out.write(chunk)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
sys.exit(128 - code if code < 0 else code)
