#!/usr/bin/env python3
"""Writes the fake sysfs trees the topology tests read (run from this directory).

vm-2cpu: this CI VM (1 NUMA node, 1 socket, 2 cores without SMT, one L3 shared by both:
a node-level cache, so the uncore cache id falls back to the socket id).

dual-socket-4-numa: 2 sockets x 2 NUMA nodes x 4 cores x 2 threads (32 CPUs); CPU c
(0-15) and its sibling c+16 are kernel core_id c%8 on socket c//8, NUMA node c//4;
each pair of cores shares an L3 (id c//2), so a NUMA node has 2 uncore caches;
node distances 10 (local), 11 (the other node of the socket), 21 (the other socket).
"""
import os
import shutil


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(content)


def mask(cpus):
    bits = 0
    for c in cpus:
        bits |= 1 << c
    words = []
    while True:
        words.append("%08x" % (bits & 0xFFFFFFFF))
        bits >>= 32
        if not bits:
            break
    return ",".join(reversed(words)) + "\n"


def cpulist(cpus):
    return ",".join(str(c) for c in sorted(cpus)) + "\n"


def tree(root, cpus, online, nodes, distances):
    """cpus: {cpu: (core_id, package, [(index, level, type, size, id, shared)])};
    distances: {node: [distance to node 0, 1, ...]} (node<N>/distance)."""
    shutil.rmtree(root, ignore_errors=True)
    base = os.path.join(root, "devices/system")
    write(os.path.join(base, "cpu/online"), online)
    for cpu, (core, package, caches) in cpus.items():
        d = os.path.join(base, "cpu/cpu%d" % cpu)
        write(os.path.join(d, "topology/core_id"), "%d\n" % core)
        write(os.path.join(d, "topology/physical_package_id"), "%d\n" % package)
        for index, level, kind, size, cid, shared in caches:
            c = os.path.join(d, "cache/index%d" % index)
            write(os.path.join(c, "level"), "%d\n" % level)
            write(os.path.join(c, "type"), kind + "\n")
            write(os.path.join(c, "size"), size + "\n")
            write(os.path.join(c, "id"), "%d\n" % cid)
            write(os.path.join(c, "shared_cpu_map"), mask(shared))
            write(os.path.join(c, "shared_cpu_list"), cpulist(shared))
    for node, node_cpus in nodes.items():
        d = os.path.join(base, "node/node%d" % node)
        write(os.path.join(d, "cpulist"), cpulist(node_cpus))
        write(os.path.join(d, "distance"), " ".join(str(x) for x in distances[node]) + "\n")
        for cpu in node_cpus:
            os.symlink("../../cpu/cpu%d" % cpu, os.path.join(d, "cpu%d" % cpu))


vm = {
    c: (c, 0, [(2, 2, "Unified", "1024K", c, [c]), (3, 3, "Unified", "32768K", 0, [0, 1])])
    for c in (0, 1)
}
tree("vm-2cpu", vm, "0-1\n", {0: [0, 1]}, {0: [10]})

big = {}
for c in range(32):
    p = c % 16
    core_threads = [p, p + 16]
    l3 = p // 2
    l3_threads = [2 * l3, 2 * l3 + 1, 2 * l3 + 16, 2 * l3 + 17]
    big[c] = (p % 8, p // 8, [(2, 2, "Unified", "512K", p, core_threads),
                              (3, 3, "Unified", "16384K", l3, l3_threads)])
nodes = {n: [c for c in range(32) if (c % 16) // 4 == n] for n in range(4)}
# SLIT distances of a 2-socket machine with 2 NUMA nodes per socket (sub-NUMA
# clustering): 10 local, 11 the other node of the socket, 21 across sockets.
slit = {n: [10 if m == n else 11 if m // 2 == n // 2 else 21 for m in range(4)] for n in range(4)}
tree("dual-socket-4-numa", big, "0-31\n", nodes, slit)
