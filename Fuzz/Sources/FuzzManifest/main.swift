import FuzzDriver

runFuzzer(seeds: seeds, fuzz)
