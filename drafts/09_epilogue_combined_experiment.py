# Issue #18: the two epilogue changes that each gained a few tenths of a point at 4096^3, together: the right half
# stored under the next tile's first two K-tiles (split2, drafts/09_split_epilogue_experiment.py) and the boxes written
# in pairs, one fence and one barrier for two (pairs, drafts/09_epilogue_cost_experiment.py). Checked, then timed
# interleaved with cuBLAS at 4096^3 (twice, for the spread between runs), 6144x4096x2048, 8192^3 and 2048^3.
# Run on a Hopper GPU with CuPy:   timeout 400 python3 drafts/09_epilogue_combined_experiment.py
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import GOAL_SIZES, last_step_experiment, load_draft


split, cost = load_draft("09_split_epilogue_experiment"), load_draft("09_epilogue_cost_experiment")
EDITS = {"split2": split.EDITS["split2"], "pairs": cost.PAIRS, "split2_pairs": split.EDITS["split2"] + cost.PAIRS}

if __name__ == "__main__":
    last_step_experiment(EDITS, split.CHECK, GOAL_SIZES, once=False)
