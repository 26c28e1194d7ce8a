#!/usr/bin/python3
"""tune_plot_svg_test: every tune_plot_demo scenario's SVG parses as XML and has the
parts a reader of tune.svg needs.

Run by Bazel as `tune_plot_svg_test.py PATH_TO_tune_plot_demo`. Only python3's standard
library is used (no renderer), so the test runs wherever CI runs.
"""

import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
DEMO = None  # Set from argv in __main__.

# scenario -> the batch sizes its trials use.
SCENARIOS = {
    "hill_climb": [32, 64, 128, 256],
    "grid": [32, 64, 128, 256],
    "single": [64],
    "one_workers": [32, 64, 128],
    "zero": [64],
    "many": [8 * i for i in range(1, 13)],
    "large_rss": [512, 1024],
    "escape": [64],
}


def render(scenario):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tune.svg")
        subprocess.run([DEMO, path, scenario], check=True)
        with open(path, "rb") as f:
            data = f.read()
        return data, ET.parse(path).getroot()


def texts(root):
    return ["".join(t.itertext()) for t in root.iter(SVG + "text")]


def by_id(root, ident):
    found = [e for e in root.iter() if e.get("id") == ident]
    return found[0] if found else None


class TunePlotSvgTest(unittest.TestCase):
    def test_every_scenario(self):
        for scenario, batch_sizes in SCENARIOS.items():
            with self.subTest(scenario=scenario):
                self.check(scenario, batch_sizes)

    def check(self, scenario, batch_sizes):
        data, root = render(scenario)
        self.assertEqual(root.tag, SVG + "svg")
        self.assertEqual(root.get("version"), "1.1")
        width, height = float(root.get("width")), float(root.get("height"))
        self.assertGreater(width, 0)
        self.assertGreater(height, 0)
        self.assertEqual(root.get("viewBox"), "0 0 %s %s" % (root.get("width"), root.get("height")))
        # Standalone: nothing a browser would fetch or run.
        for element in root.iter():
            self.assertNotIn(element.tag, (SVG + "script", SVG + "image", SVG + "foreignObject"))
            for name, value in element.attrib.items():
                self.assertNotIn("href", name)
                self.assertNotIn("url(", value)
                self.assertNotIn("nan", value)
                self.assertNotIn("inf", value)

        labels = texts(root)
        self.assertIn("num_workers", labels)
        self.assertIn("images/s", labels)
        self.assertTrue(any(t.startswith("peak RSS (") and t.endswith("iB)") for t in labels),
                        labels)

        for b in batch_sizes:
            rate = by_id(root, "rate-b%d" % b)
            rss = by_id(root, "rss-b%d" % b)
            self.assertIsNotNone(rate, b)
            self.assertIsNotNone(rss, b)
            self.assertEqual(rate.tag, SVG + "polyline")
            self.assertEqual(rss.tag, SVG + "polyline")
            self.assertEqual(rate.get("stroke"), rss.get("stroke"))
            self.assertTrue(rss.get("stroke-dasharray"))
            self.assertFalse(rate.get("stroke-dasharray"))
            legend = by_id(root, "legend-b%d" % b)
            self.assertIsNotNone(legend, b)
            self.assertIn("batch_size %d" % b, texts(legend))
        # No line for a batch size that was not tried.
        drawn = sorted(int(e.get("id")[6:]) for e in root.iter(SVG + "polyline")
                       if e.get("id", "").startswith("rate-b"))
        self.assertEqual(drawn, sorted(batch_sizes))
        # A marker per drawn point, so a single-point batch size is still visible.
        markers = [e for e in root.iter() if e.get("class") == "rate-marker"]
        points = sum(len(e.get("points").split()) for e in root.iter(SVG + "polyline")
                     if e.get("class") == "rate")
        self.assertEqual(len(markers), points)

        self.assertIsNotNone(by_id(root, "chosen-marker"))
        label = by_id(root, "chosen-label")
        self.assertIsNotNone(label)
        self.assertTrue(any(t.startswith("chosen: num_workers ") for t in texts(label)))
        self.check_inside_canvas(root, width, height)

        # Same scenario, same bytes.
        again, _ = render(scenario)
        self.assertEqual(data, again)

    def check_inside_canvas(self, root, width, height):
        """Every text's anchor point lies on the canvas (rotated axis labels included)."""
        for t in root.iter(SVG + "text"):
            x, y = float(t.get("x")), float(t.get("y"))
            self.assertTrue(0 <= x <= width and 0 <= y <= height, "".join(t.itertext()))

    def test_title_is_escaped(self):
        data, root = render("escape")
        self.assertNotIn(b"<script", data)
        title = by_id(root, "title")
        self.assertEqual("".join(title.itertext()),
                         "<script>alert('x')</script> & \"quotes\"  \ufffd caf\u00e9")
        self.assertEqual(root.find(SVG + "title").text, "".join(title.itertext()))


if __name__ == "__main__":
    DEMO = os.path.abspath(sys.argv.pop(1))
    unittest.main()
