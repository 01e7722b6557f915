#!/usr/bin/env bash
# bench/gpu_suite.sh: issues 46 and 52's prepared GPU run, one command that fits 8 minutes of a lent GPU machine.
#
# Runs, each step under its own `timeout` (its cap) and all within the wall-clock budget (450 s on a GPU):
#   setup      install the carried wheels (.whl/, `make gpu-wheels`) into a target folder, put it and the repo
#              on PYTHONPATH, register the project's entry points, print the versions it runs with;
#   rollout    (cap 150 s) bench/rollout.py at the 1.5B shape (hidden 1536, 28 layers, 128 tokens, batch 32):
#              tokens/s of every backend that runs (hf, static; vllm when installed), ratio to hf, bandwidth floor;
#   grpo_step  (caps 60 s tiny + 100 s 1.5B) bench/grpo_step.py at the tiny and the 1.5B shape: zoo/TRL step
#              ratio, generation share, memory;
#   diffusion  (cap 120 s) bench/diffusion_step.py: Flow-GRPO rounds of the diffusion engine at SD3.5-Medium's
#              shape (random weights, bf16, LoRA r32, CFG): seconds per round, peak memory;
#   sharded_semi_online  (cap 150 s) bench/sharded_step.py semi-online under `torchrun --nproc_per_node 1` (a
#              group of one still shards): two UI-S1 semi-online steps (rollout + update) of the vlm-semi-online
#              engine per launch config, fsdp-qwen2.5-vl then fsdp-qwen2.5-vl-offload, FSDP2 with bf16 compute over
#              fp32 masters, Qwen2.5-VL at the 1.5B shape with UI-S1's per-GPU work: rollout and update seconds,
#              peak memory, dtypes (and devices) of parameters, gradients, AdamW state and compute;
#   sharded_diffusion  (cap 120 s) bench/sharded_step.py diffusion, the same launcher: Flow-GRPO rounds of a full
#              fine-tune (no LoRA) at SD3.5-Medium's shape under fsdp-sd3: seconds per round, peak memory, dtypes,
#              and `plan` (`zoo train --plan`'s row for that very run, as for the semi-online configs);
#              `skipped`, with the engine's reason, when the diffusion engine leaves the denoiser whole;
#   pytest     `pytest -m "not slow and not network and not verl"` with CUDA visible, in the time left; test
#              files whose imports need a package this machine lacks are --ignore'd with that reason.
# and writes ONE JSON of everything to $OUT/gpu_suite.json (device, versions, each step's status, seconds and,
# when skipped, why; the benches' numbers, pytest's counts and failures, issue 46's targets met or not), beside
# the logs setup.log, rollout.log, grpo_step.log, diffusion_step.log, sharded_step.log (both sharded steps),
# pytest.log (7 files: the device tool brings back at most 8). OUT defaults to outputs/gpu-suite.
#
# The budget, not the sum of the caps (700 s), holds the run: a step runs for min(its cap, what is left of the
# budget less 10 s), one with under 20 s left is skipped (reason `budget` in the JSON), a step past its limit gets
# 20 s to die, so the script ends by ~465 s (the last limit ends 10 s before the budget, 20 s to die, the merge)
# whatever the steps take; setup and torchrun's start (inside its step's cap) count against the budget. Nothing
# has been timed on a GPU yet: which steps the first run reaches, and what time pytest gets, is what it finds out.
#
# Without CUDA (or with --cpu-smoke) the same steps run in a reduced mode: tiny shapes, one step each,
# the hf backend only, one pytest file, the 1.5B grpo step skipped, the sharded steps at the smoke recipes' tiny
# models under the GPU mode's launcher (one process, over gloo); tests/bench/test_gpu_suite.py runs it in the
# normal suite, so the script cannot rot between GPU machines.
#
# Usage:
#   bench/gpu_suite.sh                    GPU mode when torch sees CUDA, else the reduced mode
#   bench/gpu_suite.sh --cpu-smoke        the reduced mode (CUDA hidden)
#   bench/gpu_suite.sh --only a,b         run only these steps (setup always runs): rollout, grpo_step,
#                                         diffusion, sharded_semi_online, sharded_diffusion, pytest; e.g.
#                                         `--only pytest` to rerun the tests alone
#   bench/gpu_suite.sh --collect-wheels   what `make gpu-wheels` runs: download into .whl/ the wheels the GPU
#                                         image lacks (versions from requirements.lock), then --check-budget
#   bench/gpu_suite.sh --check-budget     print tree + untracked + .whl/ bytes; fail above 64 MiB
#   bench/gpu_suite.sh -h | --help        this text
# Environment: OUT (output folder), PYTHON (interpreter; default .venv/bin/python if present, else python3),
#   GPU_SUITE_BUDGET_S (wall budget), GPU_SUITE_BUDGET_BYTES (carry budget, default 67108864).
#
# The device call a later session makes (from the repository root, after `make gpu-wheels` here):
#   run(command="PYTHONUNBUFFERED=1 bash bench/gpu_suite.sh", carry=[".whl"], timeout_s=540)
# The script stops itself within 8 minutes (above), so the call's 9 leave slack; with the machine's start (1-2
# minutes) that is ~10 of the 15 device minutes, enough for one more call while the machine is still warm (it
# goes back after 30 s idle): the steps `steps.*.reason` says the budget cut, else pytest alone, e.g.
# run(command="GPU_SUITE_BUDGET_S=250 bash bench/gpu_suite.sh --only sharded_diffusion,pytest", carry=[".whl"],
# timeout_s=300). Call give_back when done. With the JSON (files_at/gpu_suite.json): report `targets` on
# issue 46 (best backend >= 5x hf and >= 30 % of the bandwidth floor at 1.5B; zoo/TRL <= 1.05) with the
# device named in `device.name`, and put the numbers, with that device, in the benches' docstrings; report
# `sharded_semi_online.configs` (with `plan`: `zoo train --plan`'s row for that run, its `total_gib` to set beside
# `peak_gib` on issue 53) and `sharded_diffusion` on issues 52 and 53 (seconds, `peak_gib` beside `plan.total_gib`, `dtypes`: params,
# grads and optimizer_state float32, compute bfloat16; `devices` cpu under the offload config); fix or
# file each entry of `pytest.failures` (tracebacks in pytest.log; `pytest.ignored` lists test files left out
# for a missing package); `versions.packages` shows what differed from requirements.lock (`lock`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo pipefail$/p' "${BASH_SOURCE[0]}" | sed '$d' | sed -E 's/^# ?//'; }

# --- the wheels the GPU image lacks, pinned by requirements.lock --------------------------------------------
# Pure-Python packages and small binaries only. Left out, and why: torch/torchvision (GBs; the image's 2.11
# runs), tokenizers and huggingface-hub (the image's satisfy transformers 5.23), timm (the image has it),
# av (36 MB; qwen-vl-utils imports it only for video), skia-python (15 MB), gymnasium-robotics (26 MB) with
# mujoco (7 MB), pygame-ce (14 MB) and so highway-env (imports pygame), cadquery/vtk (GBs): their tests skip.
WHEELS=(
    trl datasets dill multiprocess                       # TRL and its datasets (xxhash, pyarrow: the image's)
    diffusers qwen-vl-utils                              # the diffusion engine; Qwen-VL message helpers
    open_clip_torch ftfy wcwidth                         # CLIP pipelines and rewards
    math-verify latex2sympy2_extended antlr4-python3-runtime pycocotools   # perception rewards
    gymnasium Farama-Notifications stable_baselines3     # driving / robot policies
    CairoSVG cairocffi cssselect2 tinycss2 webencodings defusedxml cffi pycparser   # svg rendering
)
# The lock's versions of packages the image has at another version (transformers 5.17 there, 5.23 here; peft
# unread): carried, in this order, only while the total stays 1 MiB under the budget; else the image's run.
OPTIONAL_WHEELS=(transformers peft)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)
BUDGET_BYTES=${GPU_SUITE_BUDGET_BYTES:-67108864}

sum_bytes() {  # NUL-separated paths on stdin -> total bytes of those that exist
    { xargs -0 -r stat --printf '%s\n' 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}'
}

wheel_bytes() { { find .whl -maxdepth 1 -type f -name '*.whl' -print0 2>/dev/null || true; } | sum_bytes; }

check_budget() {
    local tree untracked wheels total
    tree=$(git ls-files -z | sum_bytes)
    untracked=$(git ls-files -z --others --exclude-standard | sum_bytes)
    wheels=$(wheel_bytes)
    total=$((tree + untracked + wheels))
    if [[ -d .whl ]]; then
        find .whl -maxdepth 1 -type f -name '*.whl' -printf '%s\t%f\n' | sort -rn |
            awk -F'\t' '{printf "  %8.2f MB  %s\n", $1 / 1e6, $2}'
    fi
    awk -v t="$tree" -v u="$untracked" -v w="$wheels" -v a="$total" -v b="$BUDGET_BYTES" 'BEGIN {
        printf "tracked tree %.2f MB + untracked %.2f MB + .whl %.2f MB = %.2f MB (%.2f MiB); ", t / 1e6, u / 1e6,
            w / 1e6, a / 1e6, a / 2^20
        printf "budget %.2f MiB, margin %.2f MiB\n", b / 2^20, (b - a) / 2^20 }'
    if ((total > BUDGET_BYTES)); then
        echo "over the device call's carry budget: leave out wheels (edit WHEELS in bench/gpu_suite.sh) or shrink the tree" >&2
        return 1
    fi
}

download() {  # NAME...: the lock's wheels for CPython 3.12 x86-64 into .whl/
    local pins=() lines name platform_args=()
    lines=$("$PY" bench/gpu_suite.py pins "$@")  # name==version from requirements.lock; fails on an unpinned name
    mapfile -t pins <<<"$lines"
    for name in "${PLATFORMS[@]}"; do platform_args+=(--platform "$name"); done
    "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp "${platform_args[@]}" -d .whl "${pins[@]}" 2> >(grep -v 'is ignored: it is neither' >&2)
}

carry_bytes() {  # what a device call carries: tracked + untracked-not-ignored files + .whl/
    echo $(($(git ls-files -z | sum_bytes) + $(git ls-files -z --others --exclude-standard | sum_bytes) + $(wheel_bytes)))
}

collect_wheels() {
    local name before
    rm -rf .whl && mkdir .whl
    echo "downloading ${#WHEELS[@]} wheels for CPython 3.12 x86-64 into .whl/ (versions from requirements.lock)"
    download "${WHEELS[@]}"
    for name in "${OPTIONAL_WHEELS[@]}"; do
        mapfile -t before < <(find .whl -maxdepth 1 -type f -name '*.whl')
        download "$name"
        if (($(carry_bytes) > BUDGET_BYTES - 2**20)); then
            comm -13 <(printf '%s\n' "${before[@]}" | sort) <(find .whl -maxdepth 1 -type f -name '*.whl' | sort) |
                xargs -r rm -f
            echo "left out $name: it would bring the carry within 1 MiB of the budget (the image's version runs)"
        fi
    done
    check_budget
}

# --- the run ------------------------------------------------------------------------------------------------
record() {  # NAME STATUS RC SECONDS LIMIT LOG [WHY]
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" >>"$PARTS/steps.tsv"
}

wanted() { [[ -z $ONLY || ",$ONLY," == *",$1,"* ]]; }

run_step() {  # NAME CAP LOG CMD...: CMD under `timeout` (SIGINT first, so pytest still writes its report)
    local name=$1 cap=$(($2 * CAP_SCALE)) log=$3 limit left start rc=0 status
    shift 3
    left=$((BUDGET - SECONDS - RESERVE))
    limit=$((cap < left ? cap : left))
    if ((limit < 20)); then
        echo "== $name: skipped, ${left}s of the budget left" | tee -a "$OUT/$log"
        record "$name" skipped 0 0 "$limit" "$log" "budget: ${left}s left; rerun it with --only"
        return 0
    fi
    echo "== $name (limit ${limit}s): $*" | tee -a "$OUT/$log"
    start=$SECONDS
    timeout -s INT -k 20 "$limit" "$@" >>"$OUT/$log" 2>&1 || rc=$?
    case $rc in 0) status=ok ;; 124 | 137) status=timeout ;; *) status=failed ;; esac
    record "$name" "$status" "$rc" "$((SECONDS - start))" "$limit" "$log"
    echo "== $name: $status (rc $rc) in $((SECONDS - start))s; log $OUT/$log"
}

skip_step() {  # NAME LOG WHY
    echo "== $1: skipped ($3)" | tee -a "$OUT/$2"
    record "$1" skipped 0 0 0 "$2" "$3"
}

setup() {  # never fatal: whatever fails here shows in setup.log and the JSON, and the steps still run
    local log=$OUT/setup.log start=$SECONDS wheels=() py installed=false rc=0
    : >"$log"
    py=$("$PY" -c 'import sys; print(f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}")')
    mapfile -t wheels < <(find .whl -maxdepth 1 -type f -name '*.whl' 2>/dev/null | sort)
    mkdir -p "$SITE"
    if ((${#wheels[@]})) && [[ $py == cpython312 ]]; then
        echo "installing ${#wheels[@]} carried wheels into $SITE" >>"$log"
        timeout 180 "$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile \
            --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}" >>"$log" 2>&1 && installed=true || rc=$?
    else
        echo "no carried wheels installed (${#wheels[@]} in .whl/, interpreter $py; they are for cpython312)" >>"$log"
    fi
    export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
    # the wheels' folder is not a site folder: name it, so that the project's entry points registered there count
    # (zoo_common.plugins reads plug-ins from installed distributions only, never from the rest of sys.path)
    export ZOO_PLUGIN_DIRS="$SITE"
    timeout 60 "$PY" bench/gpu_suite.py register --site "$SITE" >>"$log" 2>&1 || rc=$?
    timeout 120 "$PY" bench/gpu_suite.py versions --site "$SITE" --json "$PARTS/versions.json" >>"$log" 2>&1 || rc=$?
    printf '{"wheels": %d, "installed": %s, "interpreter": "%s"}\n' "${#wheels[@]}" "$installed" "$py" >"$PARTS/setup.json"
    record setup "$( ((rc == 0)) && echo ok || echo failed)" "$rc" "$((SECONDS - start))" 0 setup.log
    cat "$log"
}

benches() {
    local rollout=() grpo=() diffusion=() semi_online=() sharded_diffusion=() launcher
    if [[ $MODE == gpu ]]; then
        rollout=(--hidden 1536 --layers 28 --length 128 --batch 32 --backends hf,static,vllm
            --steps 2 --warmup 1 --repeats 1)
        grpo=(--steps 3 --warmup 1 --repeats 1)
        diffusion=(--rounds 2)
        semi_online=(--shape 1.5b --steps 2)
        sharded_diffusion=(--rounds 2)
    else
        rollout=(--backends hf --batch 4 --group 2 --length 4 --steps 1 --warmup 0 --repeats 1)
        grpo=(--batch 4 --group 2 --length 4 --steps 1 --warmup 0 --repeats 1 --no-cpu-memory)
        diffusion=(--shape tiny --rounds 1 --group 2 --micro-batch 2)
        semi_online=(--steps 1)
        sharded_diffusion=(--shape tiny --rounds 1 --group 2 --micro-batch 2)
    fi
    # the launcher, as a sharded run is started: one process per GPU (a group of one still shards), and in the reduced
    # mode the same one process over gloo, accelerate (the diffusion engine's) told that it runs on the CPU. Sharding
    # over two processes is what tests/engines/test_{vlm,diffusion}_sharded.py check; here the GPU path is what counts
    launcher=("$PY" -m torch.distributed.run --standalone --nproc_per_node 1)
    if [[ $MODE != gpu ]]; then launcher=(env ACCELERATE_USE_CPU=1 "${launcher[@]}"); fi
    if wanted rollout; then
        run_step rollout 150 rollout.log "$PY" bench/rollout.py "${rollout[@]}" --out "$PARTS/rollout" \
            --json "$PARTS/rollout.json"
    fi
    if wanted grpo_step; then
        run_step grpo_step_tiny 60 grpo_step.log "$PY" bench/grpo_step.py "${grpo[@]}" --out "$PARTS/grpo" \
            --json "$PARTS/grpo_tiny.json"
        if [[ $MODE == gpu ]]; then
            run_step grpo_step_1.5b 100 grpo_step.log "$PY" bench/grpo_step.py "${grpo[@]}" --hidden 1536 \
                --layers 28 --out "$PARTS/grpo" --json "$PARTS/grpo_1.5b.json"
        else
            skip_step grpo_step_1.5b grpo_step.log "cpu-smoke runs the tiny shape only"
        fi
    fi
    if wanted diffusion; then
        run_step diffusion 120 diffusion_step.log "$PY" bench/diffusion_step.py "${diffusion[@]}" \
            --json "$PARTS/diffusion.json"
    fi
    if wanted sharded_semi_online; then
        run_step sharded_semi_online 150 sharded_step.log "${launcher[@]}" bench/sharded_step.py \
            --json "$PARTS/sharded_semi_online.json" semi-online "${semi_online[@]}"
    fi
    if wanted sharded_diffusion; then
        run_step sharded_diffusion 120 sharded_step.log "${launcher[@]}" bench/sharded_step.py \
            --json "$PARTS/sharded_diffusion.json" diffusion "${sharded_diffusion[@]}"
    fi
}

run_tests() {
    local args=(-p no:cacheprovider -q -rfE --junitxml="$PARTS/pytest.xml" -m "not slow and not network and not verl")
    local ignored targets=(tests/rl/test_losses.py) workers=0
    if [[ $MODE == gpu ]]; then targets=(tests); fi
    # the suite's own test would run the reduced mode inside this run
    args+=(--ignore=tests/bench)
    timeout 120 "$PY" bench/gpu_suite.py ignores --json "$PARTS/ignores.json" >"$PARTS/ignores.txt" 2>>"$OUT/pytest.log" || true
    while IFS=$'\t' read -r ignored _; do [[ -n $ignored ]] && args+=("$ignored"); done <"$PARTS/ignores.txt"
    if "$PY" -c 'import pytest_timeout' 2>/dev/null; then args+=(--timeout=240); fi
    if [[ $MODE == gpu ]] && "$PY" -c 'import xdist' 2>/dev/null; then
        workers=$(($(nproc) > 14 ? 12 : $(nproc) - 2))
        ((workers > 1)) && args+=(-n "$workers" --dist loadfile) || workers=0
    fi
    printf '{"args": "%s", "workers": %d, "ignored": %s}\n' "${args[*]} ${targets[*]}" "$workers" \
        "$(cat "$PARTS/ignores.json" 2>/dev/null || echo '{}')" >"$PARTS/pytest_plan.json"
    run_step pytest 600 pytest.log "$PY" -m pytest "${args[@]}" "${targets[@]}"
}

main() {
    MODE=auto ONLY=""
    local action=run
    while (($#)); do
        case $1 in
        --cpu-smoke) MODE=cpu-smoke ;;
        --only) ONLY=${2:?--only takes a comma list}; shift ;;
        --collect-wheels) action=collect ;;
        --check-budget) action=check ;;
        -h | --help) usage; return 0 ;;
        *) echo "gpu_suite.sh: unknown argument $1" >&2; usage >&2; return 2 ;;
        esac
        shift
    done
    local step
    for step in ${ONLY//,/ }; do
        [[ $step =~ ^(rollout|grpo_step|diffusion|sharded_semi_online|sharded_diffusion|pytest)$ ]] || { echo "gpu_suite.sh: --only: no step $step" >&2; return 2; }
    done
    PY=${PYTHON:-python3}
    [[ -z ${PYTHON:-} && -x .venv/bin/python ]] && PY=.venv/bin/python
    case $action in
    collect) collect_wheels; return ;;
    check) check_budget; return ;;
    esac

    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled MPLBACKEND=Agg
    export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
    [[ $MODE == cpu-smoke ]] && export CUDA_VISIBLE_DEVICES=""
    if [[ $MODE == auto ]]; then
        MODE=$("$PY" -c 'import torch; print("gpu" if torch.cuda.is_available() else "cpu-smoke")')
    fi
    BUDGET=${GPU_SUITE_BUDGET_S:-$([[ $MODE == gpu ]] && echo 450 || echo 900)}
    CAP_SCALE=$([[ $MODE == gpu ]] && echo 1 || echo 4)  # step caps are a GPU's; a shared CPU runner is slower
    RESERVE=10
    OUT=${OUT:-outputs/gpu-suite}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    PARTS=$(mktemp -d "${TMPDIR:-/tmp}/gpu-suite.XXXXXX")
    SITE=$PARTS/site
    trap 'rm -rf "$PARTS"' EXIT
    rm -f "$OUT"/{setup,rollout,grpo_step,diffusion_step,sharded_step,pytest}.log "$OUT/gpu_suite.json"
    echo "gpu_suite.sh: mode $MODE, budget ${BUDGET}s, python $PY, output $OUT"

    setup
    benches
    if wanted pytest; then run_tests; fi
    "$PY" bench/gpu_suite.py merge --parts "$PARTS" --out "$OUT/gpu_suite.json" --mode "$MODE" \
        --budget "$BUDGET" --wall "$SECONDS"
    echo "gpu_suite.sh: wrote $OUT/gpu_suite.json in ${SECONDS}s; CPU time (user, system) of the shell and its children:"
    times
    awk -F'\t' '$2 != "ok" && $2 != "skipped" {bad = 1} END {exit bad}' "$PARTS/steps.tsv"
}

main "$@"
