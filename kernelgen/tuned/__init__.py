"""Tuned-defaults tables shipped with the package, one JSON file per GPU (`<key>.json`, the key from the
GPU's name: kernelgen.tune.defaults.gpu_key). kernelgen.tune.defaults reads them; `kernelgen tune-db table`
writes them from tuning databases."""
