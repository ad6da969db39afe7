#!/usr/bin/env bash
# A toyvm compare study as a Slurm job array: N tasks, each one shard of the
# study's cells, then a merge job that runs when every task has succeeded.
#
#   scripts/slurm-study.sh submit N OUTDIR -- STUDY-FLAGS...
#       sbatch --array=0-$((N-1)) this script `task`, then
#       sbatch --dependency=afterok:<array job> this script `merge`.
#   scripts/slurm-study.sh task N OUTDIR -- STUDY-FLAGS...
#       (what each array task runs) toyvm compare STUDY-FLAGS
#       --shard $SLURM_ARRAY_TASK_ID/N --cells OUTDIR/part-$SLURM_ARRAY_TASK_ID.jsonl
#       --resume: a task that is requeued or rerun keeps its finished cells.
#   scripts/slurm-study.sh merge N OUTDIR
#       toyvm compare --merge OUTDIR/part-*.jsonl, writing OUTDIR/report.txt,
#       OUTDIR/report.json, OUTDIR/report.csv, OUTDIR/tidy.csv (+ .meta.json)
#       and OUTDIR/chart.svg.
#
# STUDY-FLAGS are toyvm compare's: programs, --profile, --sweep, --synth,
# --repeat, --bench, --program-dir, --jobs. TOYVM names the binary (default:
# toyvm on PATH); SBATCH_FLAGS adds flags to both sbatch calls (partition,
# time limit, account). Each task needs the programs at the same paths (a
# shared file system), and OUTDIR must be shared too.
set -euo pipefail
mode=${1:?usage: slurm-study.sh submit|task|merge N OUTDIR [-- STUDY-FLAGS...]}
n=${2:?the number of shards}
out=${3:?the output folder}
shift 3
if [ "${1:-}" = "--" ]; then shift; fi
toyvm=${TOYVM:-toyvm}
case "$mode" in
submit)
    mkdir -p "$out"
    # shellcheck disable=SC2086
    jid=$(sbatch --parsable ${SBATCH_FLAGS:-} --array="0-$((n - 1))" \
        --output="$out/task-%a.log" "$0" task "$n" "$out" -- "$@")
    # shellcheck disable=SC2086
    sbatch --parsable ${SBATCH_FLAGS:-} --dependency="afterok:${jid%%;*}" \
        --output="$out/merge.log" "$0" merge "$n" "$out"
    ;;
task)
    i=${SLURM_ARRAY_TASK_ID:?task mode runs inside a Slurm array task}
    exec "$toyvm" compare "$@" --shard "$i/$n" --cells "$out/part-$i.jsonl" --resume
    ;;
merge)
    parts=()
    for ((i = 0; i < n; i++)); do parts+=("$out/part-$i.jsonl"); done
    "$toyvm" compare --merge "${parts[@]}" --format json --output "$out/report.json" \
        --tidy "$out/tidy.csv" --chart "$out/chart.svg"
    "$toyvm" compare --merge "${parts[@]}" --format csv --output "$out/report.csv"
    "$toyvm" compare --merge "${parts[@]}" --output "$out/report.txt"
    ;;
*)
    echo "slurm-study.sh: unknown mode '$mode' (submit, task or merge)" >&2
    exit 2
    ;;
esac
