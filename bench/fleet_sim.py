#!/usr/bin/env python3
"""How the routing policy of a fleet of `kipp serve` replicas decides the prefix-pool hit rate.

Replays a seeded trace of multi-turn conversations (tenants share a system prompt; every turn
repeats the conversation so far) over N simulated replicas, each with a Kipp-like KV pool: blocks
of 32 tokens addressed by their whole prefix, full blocks only, LRU eviction, at least one prompt
token always evaluated. The same trace is routed by each policy:

  round-robin       the default of most routers;
  least-loaded      fewest requests in progress (what a load-only picker does);
  hash-window       consistent hashing on the body's first 256 bytes (about 64 tokens), bounded load;
  hash-first-user   consistent hashing on the first user message, bounded load, every turn
                    hashed anew (the bound may move any turn);
  sticky-first-user the same placement for a conversation's first turn, then every later turn to
                    the replica that answered the one before: deploy/haproxy/kipp.cfg (hash-type
                    consistent, hash-balance-factor 125, a stick table on the same key);
  longest-prefix    a router-side index of the blocks each replica was sent, longest match wins
                    among replicas under the load bound (what the Gateway API Inference Extension's
                    approximate prefix-cache scorer does).

It reports, per policy: the prefix hit rate (prompt tokens served from a replica's pool), the
prefill tokens left to compute, the load spread (the busiest replica's requests and prefill work
over the mean), and request latency percentiles under a simple service model (flags below).

  python3 bench/fleet_sim.py [--replicas 3] [--conversations 600] [--clients 24] ...
  python3 bench/fleet_sim.py --check   # a small trace, and the properties any correct run has
"""
import argparse
import hashlib
import heapq
import math
import random
import sys
from collections import OrderedDict

BLOCK = 32           # tokens per KV block, as in Kipp's pool
WINDOW_TOKENS = 64   # about 256 bytes of JSON body


def stable_hash(*parts):
    """A 64-bit hash that does not change between runs (Python's hash() is salted)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, 'little')


# ---- the trace -------------------------------------------------------------------------------

class Conversation:
    def __init__(self, ident, system, users, answers):
        self.ident = ident
        self.system = system    # token list shared with the tenant's other conversations
        self.users = users      # each turn's user message (token lists); users[0] keys the hash
        self.answers = answers  # each turn's answer length


def answer_tokens(conversation, turn):
    return [('answer', conversation.ident, turn, i) for i in range(conversation.answers[turn])]


def make_trace(args, rng):
    counter = iter(range(10**12))
    fresh = lambda n: [next(counter) for _ in range(n)]  # tokens never seen before
    systems = [fresh(args.system_tokens) for _ in range(args.tenants)]
    weights = [1 / (t + 1) for t in range(args.tenants)]  # a few tenants carry most traffic
    trace = []
    for ident in range(args.conversations):
        system = rng.choices(systems, weights)[0]
        turns = rng.randint(2, 9)
        users = [fresh(rng.randint(30, 400))] + [fresh(rng.randint(10, 120)) for _ in range(turns - 1)]
        trace.append(Conversation(ident, system, users, [rng.randint(20, 300) for _ in range(turns)]))
    return trace


def requests_of(conversation):
    """The prompts one conversation sends, turn after turn, each with its answer's length."""
    history, prompts = list(conversation.system), []
    for turn, user in enumerate(conversation.users):
        history = history + user
        prompts.append(history)
        history = history + answer_tokens(conversation, turn)
    return prompts


def block_addresses(tokens):
    """The content address of every full block of `tokens`, chained over the blocks before it."""
    addresses, previous = [], 0
    for start in range(0, len(tokens) - len(tokens) % BLOCK, BLOCK):
        previous = stable_hash(previous, tuple(tokens[start:start + BLOCK]))
        addresses.append(previous)
    return addresses


# ---- a replica -------------------------------------------------------------------------------

class Replica:
    def __init__(self, pool_blocks, batch):
        self.pool = OrderedDict()   # published block address -> None, least recently used first
        self.pool_blocks = pool_blocks
        self.batch = batch
        self.running = 0
        self.waiting = []           # requests admitted but not yet running, in arrival order
        self.requests = 0
        self.prefill_tokens = 0

    def in_progress(self):
        return self.running + len(self.waiting)

    def adopt(self, prompt):
        """The prompt tokens this replica's pool already holds (whole blocks, never the last token)."""
        addresses = block_addresses(prompt)[:(len(prompt) - 1) // BLOCK]
        hits = 0
        for address in addresses:
            if address not in self.pool:
                break
            self.pool.move_to_end(address)
            hits += 1
        return hits * BLOCK

    def publish(self, tokens):
        for address in block_addresses(tokens):
            self.pool[address] = None
            self.pool.move_to_end(address)
        while len(self.pool) > self.pool_blocks:
            self.pool.popitem(last=False)


# ---- routing policies ------------------------------------------------------------------------

class Ring:
    """A consistent-hash ring with `points` virtual nodes per replica and a load bound."""

    def __init__(self, replicas, points, factor):
        self.points = sorted((stable_hash('replica', r, v), r) for r in range(replicas) for v in range(points))
        self.factor = factor

    def pick(self, key, replicas):
        total = sum(r.in_progress() for r in replicas)
        bound = math.ceil(self.factor * (total + 1) / len(replicas))
        start = self._first_point(stable_hash(key))
        for step in range(len(self.points)):
            candidate = self.points[(start + step) % len(self.points)][1]
            if replicas[candidate].in_progress() + 1 <= bound:
                return candidate
        return self.points[start][1]

    def _first_point(self, value):
        low, high = 0, len(self.points)
        while low < high:
            middle = (low + high) // 2
            if self.points[middle][0] < value:
                low = middle + 1
            else:
                high = middle
        return low % len(self.points)


def make_policy(name, args):
    if name == 'round-robin':
        counter = iter(range(10**12))
        return lambda request, replicas: next(counter) % len(replicas)
    if name == 'least-loaded':
        return lambda request, replicas: min(range(len(replicas)), key=lambda r: (replicas[r].in_progress(), r))
    if name in ('hash-window', 'hash-first-user', 'sticky-first-user'):
        ring = Ring(args.replicas, 100, args.balance_factor)
        if name == 'hash-window':
            return lambda request, replicas: ring.pick(tuple(request['prompt'][:WINDOW_TOKENS]), replicas)
        if name == 'hash-first-user':
            return lambda request, replicas: ring.pick(tuple(request['conversation'].users[0]), replicas)
        stuck = {}  # conversation -> the replica its first turn was placed on

        def pick(request, replicas):
            conversation = request['conversation'].ident
            if conversation not in stuck:
                stuck[conversation] = ring.pick(tuple(request['conversation'].users[0]), replicas)
            return stuck[conversation]
        return pick
    if name == 'longest-prefix':
        sent = [OrderedDict() for _ in range(args.replicas)]  # the router's guess of each pool

        def pick(request, replicas):
            addresses = block_addresses(request['prompt'])
            total = sum(r.in_progress() for r in replicas)
            bound = math.ceil(args.balance_factor * (total + 1) / len(replicas))
            def matched(r):
                count = 0
                while count < len(addresses) and addresses[count] in sent[r]:
                    count += 1
                return count
            eligible = [r for r in range(len(replicas)) if replicas[r].in_progress() + 1 <= bound] or range(len(replicas))
            choice = max(eligible, key=lambda r: (matched(r), -replicas[r].in_progress(), -r))
            for address in addresses:
                sent[choice][address] = None
                sent[choice].move_to_end(address)
            while len(sent[choice]) > args.pool_blocks:
                sent[choice].popitem(last=False)
            return choice
        return pick
    raise ValueError(name)


POLICIES = ['round-robin', 'least-loaded', 'hash-window', 'hash-first-user', 'sticky-first-user', 'longest-prefix']


# ---- the event loop --------------------------------------------------------------------------

def simulate(trace, policy_name, args):
    rng = random.Random(args.seed + 1)   # think times: the same for every policy
    replicas = [Replica(args.pool_blocks, args.batch) for _ in range(args.replicas)]
    policy = make_policy(policy_name, args)
    events = []                          # (time, sequence, kind, payload)
    sequence = iter(range(10**12))
    push = lambda time, kind, payload: heapq.heappush(events, (time, next(sequence), kind, payload))
    pending = list(reversed(trace))
    latencies, prompt_tokens, cached_tokens = [], 0, 0

    def next_conversation(time):
        if pending:
            conversation = pending.pop()
            push(time, 'arrive', {'conversation': conversation, 'prompts': requests_of(conversation), 'turn': 0})

    def start(replica, request, time):
        nonlocal prompt_tokens, cached_tokens
        replica.running += 1
        hits = replica.adopt(request['prompt'])
        computed = len(request['prompt']) - hits
        prompt_tokens += len(request['prompt'])
        cached_tokens += hits
        replica.prefill_tokens += computed
        answer = request['conversation'].answers[request['turn']]
        service = computed / args.prefill_rate + answer / args.decode_rate
        push(time + service, 'finish', request)

    for _ in range(args.clients):
        next_conversation(0.0)
    while events:
        time, _, kind, request = heapq.heappop(events)
        if kind == 'arrive':
            request['prompt'] = request['prompts'][request['turn']]
            request['arrived'] = time
            request['replica'] = policy(request, replicas)
            replica = replicas[request['replica']]
            replica.requests += 1
            if replica.running < replica.batch:
                start(replica, request, time)
            else:
                replica.waiting.append(request)
        else:
            replica = replicas[request['replica']]
            replica.running -= 1
            replica.publish(request['prompt'] + answer_tokens(request['conversation'], request['turn']))
            latencies.append(time - request['arrived'])
            if replica.waiting:
                start(replica, replica.waiting.pop(0), time)
            if request['turn'] + 1 < len(request['prompts']):
                push(time + rng.expovariate(1 / args.think_seconds), 'arrive',
                     {'conversation': request['conversation'], 'prompts': request['prompts'], 'turn': request['turn'] + 1})
            else:
                next_conversation(time)

    latencies.sort()
    percentile = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))]
    mean_requests = sum(r.requests for r in replicas) / len(replicas)
    mean_prefill = sum(r.prefill_tokens for r in replicas) / len(replicas)
    return {
        'policy': policy_name,
        'requests': len(latencies),
        'hit_rate': cached_tokens / prompt_tokens,
        'prefill_tokens': prompt_tokens - cached_tokens,
        'request_spread': max(r.requests for r in replicas) / mean_requests,
        'prefill_spread': max(r.prefill_tokens for r in replicas) / mean_prefill if mean_prefill else 1.0,
        'p50': percentile(0.5),
        'p99': percentile(0.99),
    }


def report(results, args):
    print(f'# {args.conversations} conversations, {args.clients} clients, {args.replicas} replicas, '
          f'{args.tenants} tenants with {args.system_tokens}-token system prompts, pool {args.pool_blocks} blocks '
          f'of {BLOCK}, batch {args.batch}, prefill {args.prefill_rate:g} tok/s, decode {args.decode_rate:g} tok/s '
          f'per sequence, balance factor {args.balance_factor:g}, seed {args.seed}')
    print('| policy | requests | prefix hit rate | prefill tokens | request spread (max/mean) | '
          'prefill spread (max/mean) | p50 latency (s) | p99 latency (s) |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    for r in results:
        print(f"| {r['policy']} | {r['requests']} | {r['hit_rate']:.1%} | {r['prefill_tokens']} | "
              f"{r['request_spread']:.2f} | {r['prefill_spread']:.2f} | {r['p50']:.2f} | {r['p99']:.2f} |")


def check(args):
    """Properties every correct run has, on a trace small enough for the test suite."""
    args.conversations, args.clients = 120, 12
    trace = make_trace(args, random.Random(args.seed))
    expected = sum(len(requests_of(c)) for c in trace)
    results = {name: simulate(trace, name, args) for name in POLICIES}
    report(results.values(), args)
    failures = []
    for name, r in results.items():
        if r['requests'] != expected:
            failures.append(f'{name}: {r["requests"]} requests served of {expected}')
    # One replica: the policy cannot matter, and every policy must see the same hits.
    single = argparse.Namespace(**{**vars(args), 'replicas': 1})
    alone = {round(simulate(trace, name, single)['hit_rate'], 12) for name in POLICIES}
    if len(alone) != 1:
        failures.append(f'one replica, yet the policies disagree on the hit rate: {sorted(alone)}')
    # The same seed replays the same run.
    if simulate(trace, 'sticky-first-user', args) != results['sticky-first-user']:
        failures.append('the same seed gave a different run')
    for name in ('hash-first-user', 'sticky-first-user'):
        # Affinity must beat spraying: following the conversation keeps its history in one pool, so
        # far less prefill is left (round robin still finds the system prompts, cached everywhere).
        if results[name]['prefill_tokens'] > 0.6 * results['round-robin']['prefill_tokens']:
            failures.append(f'{name} leaves more than 0.6x the prefill of round robin')
        # The load bound holds the busiest replica near the mean.
        if results[name]['request_spread'] > 1.5:
            failures.append(f"{name} spreads load {results[name]['request_spread']:.2f}x the mean")
    for failure in failures:
        print(f'FAIL: {failure}', file=sys.stderr)
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--replicas', type=int, default=3)
    parser.add_argument('--conversations', type=int, default=600)
    parser.add_argument('--clients', type=int, default=24, help='conversations in progress at once')
    parser.add_argument('--tenants', type=int, default=4, help='distinct system prompts')
    parser.add_argument('--system-tokens', type=int, default=1200)
    parser.add_argument('--pool-blocks', type=int, default=2048, help='KV blocks of 32 tokens per replica')
    parser.add_argument('--batch', type=int, default=8, help='requests a replica runs at once')
    parser.add_argument('--prefill-rate', type=float, default=400.0, help='prompt tokens per second per replica')
    parser.add_argument('--decode-rate', type=float, default=15.0, help='answer tokens per second per sequence')
    parser.add_argument('--think-seconds', type=float, default=5.0, help='mean pause between turns')
    parser.add_argument('--balance-factor', type=float, default=1.25, help="HAProxy's hash-balance-factor / 100")
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--check', action='store_true', help='run the self-checks on a small trace')
    args = parser.parse_args()
    if args.check:
        return check(args)
    trace = make_trace(args, random.Random(args.seed))
    report([simulate(trace, name, args) for name in POLICIES], args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
