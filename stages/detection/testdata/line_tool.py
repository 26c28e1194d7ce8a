"""line_tool: a parity tool process (det_tool, det_op_tool, multi_sample_tool) asked one
command a line, tab-separated; its answer is the lines it writes up to END (or to its
exit), or, for det_tool, the one line it writes (ask_line)."""
import subprocess


class Tool:
    def __init__(self, path):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def _send(self, fields):
        self.proc.stdin.write("\t".join(str(f) for f in fields) + "\n")
        self.proc.stdin.flush()

    def ask_line(self, *fields):
        """The command's one-line answer, stripped."""
        self._send(fields)
        return self.proc.stdout.readline().strip()

    def ask(self, *fields):
        self._send(fields)
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if line == "" or line.rstrip("\n") == "END":
                return "\n".join(lines)
            lines.append(line.rstrip("\n"))
