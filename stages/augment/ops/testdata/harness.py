"""harness: the case records of ops_parity_test (see its docstring), and OpTool, the
op_tool process both parity tests (ops_parity_test, label_parity_test) talk to."""
import subprocess


class OpTool:
    """One op_tool process, fed commands line by line."""

    def __init__(self, path):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def run(self, *fields):
        self.proc.stdin.write("\t".join(str(f) for f in fields) + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if line == "":
                raise RuntimeError("op_tool exited")
            if line.rstrip("\n") == "END":
                return "\n".join(lines)
            lines.append(line.rstrip("\n"))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class Parity:
    def __init__(self, op_text, params, reference, max_diff=1, min_psnr=None,
                 tensor_input=False, images=None):
        self.op_text = op_text
        self.images = images  # Optional: () -> more PIL RGB images, for edge cases.
        self.params = params  # A list, or a function of the PIL image giving one.
        self.reference = reference
        self.max_diff = max_diff
        self.min_psnr = min_psnr
        self.tensor_input = tensor_input  # The op reads the normalized tensor.


class Distribution:
    def __init__(self, op_text, width, height, reference, columns=None, applied=None,
                 joint=None):
        self.op_text = op_text
        # Optional: tuples of column indices whose values are compared jointly, as one
        # categorical value per draw (a permutation's 24 orders).
        self.joint = joint
        self.width = width
        self.height = height
        self.reference = reference  # (width, height, n) -> array [n, k], or None.
        self.columns = columns
        self.applied = applied
