"""`kipp --backend cuda` as a user runs it, on the emulated device (kipp-cuda-emulated).

`kipp bench` reports the device memory it held: at least the weights plus the KV cache it
reserved, and within the device. (The logit gate of the GPU run is the next ctest, also on
this binary.)
"""
import argparse
import json
import os
import subprocess
import sys
import unittest

parser = argparse.ArgumentParser()
parser.add_argument("--kipp", required=True)
parser.add_argument("--models", required=True)
ARGS, rest = parser.parse_known_args()


class BenchOnTheDevice(unittest.TestCase):
    def test_device_memory_covers_the_weights_and_the_kv_cache(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.q8_0.gguf")
        run = subprocess.run([ARGS.kipp, "bench", "--model", model, "--backend", "cuda", "-p", "16", "-n", "2",
                              "--reps", "1", "--batch", "1,2", "--json"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        self.assertTrue(report["backend"].startswith("cuda ("), report["backend"])
        device = report["device_memory"]
        self.assertIn("emulator", device["device"])
        # 16 + 2 positions: one 32-position block; 2 layers x K and V x 1024 values x 2 bytes.
        self.assertEqual(report["kv_cache_bytes"], 32 * 2 * 2 * 1024 * 2)
        self.assertGreaterEqual(device["held_peak_bytes"], report["copied_weight_bytes"] + report["kv_cache_bytes"])
        self.assertLessEqual(device["used_bytes"], device["total_bytes"])
        for figure in ("prefill_tokens_per_second", "decode_tokens_per_second"):
            self.assertGreater(report[figure]["median"], 0, figure)
        self.assertEqual(sorted(report["batch_decode_tokens_per_second"]), ["1", "2"])
        for batch, summary in report["batch_decode_tokens_per_second"].items():
            self.assertGreater(summary["median"], 0, batch)

    def test_the_text_report_names_the_device(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        run = subprocess.run([ARGS.kipp, "bench", "--model", model, "--backend", "cuda", "-p", "8", "-n", "1",
                              "--reps", "1"], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("device memory", run.stdout)
        self.assertIn("Kipp CUDA emulator", run.stdout)

    def test_a_device_too_small_is_one_clear_line(self):
        model = os.path.join(ARGS.models, "qwen3-tiny.bf16.gguf")
        env = dict(os.environ, KIPP_CUDA_EMULATOR_MIB="16")
        run = subprocess.run([ARGS.kipp, "generate", "--model", model, "--backend", "cuda", "--prompt", "Hi",
                              "-n", "1"], capture_output=True, text=True, env=env)
        self.assertNotEqual(run.returncode, 0)
        self.assertEqual(run.stdout, "")
        lines = run.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn("out of memory", lines[0])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + rest)
