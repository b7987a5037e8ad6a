# Twelfth session, third device call: why test_layouts' GPU tests failed in call 2 (new tree and the session's
# starting tree, first failure each), then B's shared-row padding on NT (pad_b 4, the layout's knob, against 0).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
rm -rf /tmp/old /tmp/pb0 && cp -r . /tmp/old && cp -r ab_old/. /tmp/old/ && cp -r . /tmp/pb0
sed -i 's/knobs = dict(pad_b=4) if o.b_t else {}/knobs = {}/' /tmp/pb0/kernelgen/ops/sgemm.py
grep -n "knobs = {}" /tmp/pb0/kernelgen/ops/sgemm.py
{ for d in $PWD /tmp/old; do echo "## $d"; (cd $d && PYTHONPATH=$d timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_layouts.py -x --tb=short 2>&1 | grep -v -i warn | tail -40); done; } > $OUT/gpu_layouts_first_failure.txt 2>&1
{ date -u; for t in pb4 pb0 pb4 pb0; do
    d=$([ $t = pb0 ] && echo /tmp/pb0 || echo $PWD)
    echo "## $t"; (cd $d && PYTHONPATH=$d KERNELGEN_CACHE_DIR=/tmp/kc_$t timeout 110 python3 -m kernelgen.cli bench --suite $PWD/bench/suites/sgemm_nt_pad.txt --reps 10 --markdown 2>&1 | grep -v -i "warn\|^suite ")
  done; } > $OUT/sgemm_nt_pad.md 2>&1
ls $OUT
