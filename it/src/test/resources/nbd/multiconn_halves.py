# Two real libnbd connections write disjoint 512-byte halves of the same 4 KiB blocks, all
# pipelined at once (after the blocks were zeroed); then a third connection reads every block back.
# usage: python3 multiconn_halves.py URI BLOCKS   (exit 0 = every block holds both halves)
import sys
import nbd

uri, n = sys.argv[1], int(sys.argv[2])
conns = []
cookies = []
for skew, fill in ((0, 0xAA), (512, 0xBB)):
    h = nbd.NBD()
    h.connect_uri(uri)
    if not h.can_multi_conn():
        sys.exit("export does not advertise CAN_MULTI_CONN")
    buf = nbd.Buffer.from_bytearray(bytearray([fill]) * 512)
    conns.append((h, buf))
# the blocks start as zeros whatever earlier tests wrote there (a test class may share its export):
# written and flushed by one connection before the two connections race on the halves
h0 = conns[0][0]
zero = bytearray(4096)
for i in range(n):
    h0.pwrite(zero, i * 4096)
h0.flush()
for i in range(n):
    for k, (h, buf) in enumerate(conns):
        cookies.append((h, h.aio_pwrite(buf, i * 4096 + 512 * k)))
while any(h.aio_in_flight() > 0 for h, _ in conns):
    for h, _ in conns:
        if h.aio_in_flight() > 0:
            h.poll(1)
for h, c in cookies:
    h.aio_command_completed(c)  # raises on a write error
for h, _ in conns:
    h.flush()
    h.shutdown()
r = nbd.NBD()
r.connect_uri(uri)
lost = 0
want = b"\xaa" * 512 + b"\xbb" * 512 + bytes(3072)
for i in range(n):
    if r.pread(4096, i * 4096) != want:
        lost += 1
r.shutdown()
print("blocks that lost a half: %d of %d" % (lost, n))
sys.exit(1 if lost else 0)
