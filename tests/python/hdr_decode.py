"""Decodes referee's HdrHistogram blobs with Python's `hdrhistogram` package (0.10.8).

Reads one base64 V2+DEFLATE blob a line on stdin; writes one JSON object a line on
stdout: {"total": count, "min": µs, "max": µs, "counts": [[value, count], ...]} where
`counts` lists every recorded bucket (value = the bucket's highest equivalent value).
Used by runner/loadgen/tests/load_hdr_python.rs (content/measurement.md: interop
compares decoded counts, min, max and total, not percentiles).
"""

import json
import sys

from hdrh.histogram import HdrHistogram


def main() -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        histogram = HdrHistogram.decode(line)
        counts = [
            [histogram.get_highest_equivalent_value(item.value_iterated_to),
             item.count_at_value_iterated_to]
            for item in histogram.get_recorded_iterator()
        ]
        print(json.dumps({
            "total": histogram.get_total_count(),
            "min": histogram.get_min_value(),
            "max": histogram.get_max_value(),
            "counts": counts,
        }))


if __name__ == "__main__":
    main()
