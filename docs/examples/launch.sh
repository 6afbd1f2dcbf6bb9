#!/bin/bash
MODEL=deepseek-ai/DeepSeek-V3
num_prefill=2
ARGS=(--tp 16 --enable-dp-attention)
ARGS+=(--dp "$((num_prefill * 8))")
export SGLANG_ENABLE_SPEC_V2=${SPEC_V2:-0}

python -m sglang.launch_server --model-path "$MODEL" "${ARGS[@]}" \
    --max-running-requests $MAX_RUNNING_REQUESTS \
    --chunked-prefill-size ${CHUNK:-8192} $EXTRA_ARGS
    --port 30000 \
    --host 0.0.0.0
