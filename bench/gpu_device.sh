#!/usr/bin/env bash
# `python -m bench gpu` on a bare GPU machine (torch, transformers, peft, accelerate there; no
# network, no TRL, datasets or pydantic). Run from the repository root, carrying `.whl` (the
# small wheels the machine lacks: TRL, datasets, dill, multiprocess, pydantic and its parts)
# and `.gpu` (the test model's tokenizer, processor, template and config: no weights):
#   bash bench/gpu_device.sh                      # every part
#   bash bench/gpu_device.sh decode_floor train   # only these parts
# The JSON lands in $OUT/gpu.json (bench/results/gpu.json without $OUT), rewritten per part.
set -euo pipefail
cd "$(dirname "$0")/.."

site=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl
export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export FOLIO_VLLM_MODEL_DIR="$PWD/.gpu/tiny-qwen2vl" TOKENIZERS_PARALLELISM=false

python3 -c '
import datasets, peft, pydantic, torch, transformers, trl
print("torch", torch.__version__, "transformers", transformers.__version__, "trl", trl.__version__,
      "peft", peft.__version__, "datasets", datasets.__version__, "pydantic", pydantic.__version__)
print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")'

out="${OUT:-bench/results}/gpu.json"
python3 -m bench gpu --out "$out" --only "$@"
