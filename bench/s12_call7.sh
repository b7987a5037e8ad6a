# Twelfth session, seventh device call: the NT rows whose tile has bm <= 64 under the padding rule of 1085db9
# (call 5/6 measured them unpadded), and every SGEMM family at three skinny-M NN shapes in no list.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m kernelgen.cli bench --suite bench/suites/sgemm_nt_small_bm.txt --reps 10 --markdown 2>&1 | grep -v -i "warn\|^suite sgemm_nt" > $OUT/sgemm_nt_small_bm.md
timeout 330 python3 bench/sgemm_regimes_probe.py --shapes 96x3000x2000,128x6000x3000,64x5000x1500 --families all --deadline 250 > $OUT/probe.log 2>&1
ls $OUT
