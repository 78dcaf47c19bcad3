#!/usr/bin/python3
"""A small PyTorch DDP training job for faultline: CPU, gloo, synthetic data.

Run once per rank with the variables torch.distributed reads (faultline's command job sets
them, docs/scenarios.md): RANK, WORLD_SIZE, MASTER_ADDR (rank 0's data address),
MASTER_PORT, and LOCAL_RANK; GLOO_SOCKET_IFNAME (the data NIC), when set, is read by gloo
itself. By hand, on a local lab (docs/scenarios.md, "Example: PyTorch DDP"):

    ip netns exec fl-L-h0 env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=198.18.0.1 \\
        MASTER_PORT=29500 GLOO_SOCKET_IFNAME=nic0 /usr/bin/python3 ddp_train.py --steps 50

The model is an MLP of --layers square --width layers (default 2 x 1024: 8.4 MB of float32
gradients, all-reduced by DDP every step over the data NIC). Data are drawn from a fixed seed
per rank. Every step is reported with faultline_progress.report(step, grad_bytes, ok=...):
every --check-every steps ok says whether the parameters are still bit-identical on all
ranks (one all_reduce of a checksum, MAX and MIN); other steps carry no ok. With --seconds
the ranks agree in that same all_reduce on when to stop (every step when --check-every 0).

Exit status: 0 done; 1 a collective failed or timed out (--pg-timeout; the message is on
stderr, prefixed "ddp_train: collective error"); 2 bad arguments or environment; 3 the
parameters diverged across ranks.

Debian's python3-torch is for /usr/bin/python3: run it with that interpreter.
"""

import argparse
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faultline_progress  # noqa: E402  (beside this file)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=0,
                   help="training steps to run (0: until --seconds)")
    p.add_argument("--seconds", type=float, default=0,
                   help="run for this long after the first step (0: until --steps)")
    p.add_argument("--width", type=int, default=1024, help="width of each layer")
    p.add_argument("--layers", type=int, default=2, help="number of width x width layers")
    p.add_argument("--batch", type=int, default=4, help="samples per rank per step")
    p.add_argument("--check-every", type=int, default=10,
                   help="compare the parameters across ranks every k steps (0: never)")
    p.add_argument("--pg-timeout", type=float, default=60,
                   help="process-group timeout in seconds: a collective stuck this long fails")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    a = p.parse_args(argv)
    if a.steps < 0 or a.seconds < 0 or (a.steps == 0 and a.seconds == 0):
        p.error("give --steps N or --seconds S (positive)")
    if a.width < 1 or a.layers < 1 or a.batch < 1 or a.check_every < 0 or a.pg_timeout <= 0:
        p.error("--width, --layers, --batch and --pg-timeout must be positive")
    return a


def env_int(name):
    v = os.environ.get(name)
    if v is None or not v.isdigit():
        print("ddp_train: %s must be set to a non-negative integer (got %r)" % (name, v),
              file=sys.stderr)
        sys.exit(2)
    return int(v)


def main(argv):
    args = parse_args(argv)
    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            print("ddp_train: %s must be set" % name, file=sys.stderr)
            return 2

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(args.threads)
    timeout = datetime.timedelta(seconds=args.pg_timeout)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
    except Exception as e:  # rendezvous or connection set-up failed
        print("ddp_train: collective error at init: %s" % e, file=sys.stderr)
        return 1

    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP broadcasts too)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers[:-1]))
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)  # this rank's shard
    loss_fn = torch.nn.MSELoss()
    print("ddp_train: rank %d/%d local %d: %d layers x %d, %d gradient bytes per step, "
          "pg timeout %.0fs" % (rank, world, local_rank, args.layers, args.width, grad_bytes,
                                args.pg_timeout), file=sys.stderr, flush=True)

    step, start, diverged = 0, None, False
    try:
        while True:
            x = torch.randn(args.batch, args.width, generator=gen)
            y = torch.randn(args.batch, args.width, generator=gen)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            opt.step()
            ok = None
            # Every check step (every step when only --seconds ends the run and no check is
            # asked for), one all_reduce carries the parameter checksum and the --seconds
            # stop vote, so that all ranks stop after the same step.
            sync = args.check_every or (1 if args.seconds else 0)
            stop = bool(args.steps and step + 1 >= args.steps)
            if sync and step % sync == 0:
                late = bool(args.seconds and start is not None and
                            time.monotonic() - start >= args.seconds)
                with torch.no_grad():
                    # float32 sums, no copies: the check must not slow its step down much
                    # (bit-identical parameters give bit-identical sums on every rank)
                    c = torch.stack([p.sum() for p in model.parameters()]).sum()
                    v = torch.stack([c, -c, torch.tensor(float(late))])
                    dist.all_reduce(v, op=dist.ReduceOp.MAX)  # max, -min of the sums; any late
                if args.check_every:
                    ok = bool(v[0].item() == -v[1].item())
                    diverged = diverged or not ok
                stop = stop or v[2].item() > 0
            faultline_progress.report(step, grad_bytes, ok=ok)
            step += 1
            if start is None:
                start = time.monotonic()
            if stop:
                break
    except RuntimeError as e:  # gloo: a peer went away, a socket error, or the timeout
        print("ddp_train: collective error at step %d: %s" % (step, e), file=sys.stderr,
              flush=True)
        os._exit(1)  # destroy_process_group could block on the broken peers
    elapsed = time.monotonic() - start if start is not None else 0
    print("ddp_train: rank %d done: %d steps in %.2fs (%.1f ms/step)%s" %
          (rank, step, elapsed, 1000 * elapsed / max(step - 1, 1),
           ", parameters DIVERGED" if diverged else ""), file=sys.stderr, flush=True)
    dist.destroy_process_group()
    return 3 if diverged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
