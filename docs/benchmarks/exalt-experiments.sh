#!/bin/sh
# The Exalt experiments whose CSV/PNG are committed in docs/benchmarks (run by hand, one at a time;
# the machine is a shared 2-core / 24 GiB box, so absolute numbers are noisy).
set -e
cd "$(dirname "$0")/../.."
X=exalt-agent/exalt
export EXALT_HEAP=${EXALT_HEAP:-4g}
# 1. colocation + throughput vs number of emulated DataNodes (paper defaults: 192 MB files, 128 MB blocks, r=3)
$X hdfs --datanodes 10,50,100,200 --duration 30 --warmup 10 --measure-disk --name exalt-hdfs-datanodes
# 2. throughput vs NameNode handler count, NameNode-bound workload (1 MB files, 1 MB blocks)
$X hdfs --datanodes 20 --clients 32 --handlers 1,2,5,10,50 --file-size 1m --block-size 1m --duration 30 --warmup 5 --name exalt-hdfs-handlers
# 3. same-directory workload vs own directories, with a directory pre-filled with N files
$X hdfs --workload same-dir --datanodes 20 --clients 16 --file-size 64k --block-size 1m --prefill 0 --duration 30 --warmup 5 --name exalt-hdfs-samedir-0
$X hdfs --workload same-dir --datanodes 20 --clients 16 --file-size 64k --block-size 1m --prefill 100000 --duration 30 --warmup 5 --name exalt-hdfs-samedir-100k
$X hdfs --workload own-dir --datanodes 20 --clients 16 --file-size 64k --block-size 1m --prefill 100000 --duration 30 --warmup 5 --name exalt-hdfs-owndir-100k
# 4. growing-file workload: 4 clients each append to one file forever, 1 MB blocks
$X hdfs --workload growing-file --datanodes 20 --clients 4 --block-size 1m --duration 120 --warmup 5 --name exalt-hdfs-growing
# 5. DataNode block scan vs blocks per DataNode
$X blockscan --steps 1000,2000,4000,8000
