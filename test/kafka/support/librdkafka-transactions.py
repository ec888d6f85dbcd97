"""librdkafka's transactional producer (python3-confluent-kafka) against the Kafka listener, read back
read_committed; prints one JSON line per step.

Usage: librdkafka-transactions.py BROKER TOPIC
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer

broker, topic = sys.argv[1], sys.argv[2]


def out(step, **kv):
    print(json.dumps({'step': step, **kv}), flush=True)


p = Producer({'bootstrap.servers': broker, 'transactional.id': f'{topic}-tx', 'linger.ms': 5})
p.init_transactions(15)
p.begin_transaction()
for i in range(10):
    p.produce(topic, value=f'c{i}', partition=i % 2)
p.commit_transaction(15)
p.begin_transaction()
for i in range(5):
    p.produce(topic, value=f'a{i}', partition=i % 2)
p.flush(15)
p.abort_transaction(15)
out('produced')


def read(group, isolation, want, seconds=15):
    c = Consumer({'bootstrap.servers': broker, 'group.id': group, 'auto.offset.reset': 'earliest',
                  'enable.auto.commit': False, 'isolation.level': isolation, 'fetch.wait.max.ms': 100,
                  'session.timeout.ms': 6000, 'heartbeat.interval.ms': 300})
    c.subscribe([topic])
    values = []
    end = time.time() + seconds
    while len(values) < want and time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            values.append(m.value().decode())
    return c, values


committed_reader, committed = read(f'{topic}-rc', 'read_committed', 10)
# Nothing more arrives read_committed: the aborted records stay hidden.
deadline = time.time() + 1.5
while time.time() < deadline:
    m = committed_reader.poll(0.2)
    if m is not None and not m.error():
        committed.append(m.value().decode())
out('read_committed', values=sorted(committed))
uncommitted_reader, uncommitted = read(f'{topic}-ru', 'read_uncommitted', 15)
uncommitted_reader.close()
out('read_uncommitted', values=sorted(uncommitted))

# Consume-transform-produce: the consumer's position is committed inside the transaction (KIP-447).
p.begin_transaction()
p.produce(topic, value='derived', partition=0)
positions = committed_reader.position(committed_reader.assignment())
p.send_offsets_to_transaction(positions, committed_reader.consumer_group_metadata(), 15)
p.commit_transaction(15)
out('sent_offsets', offsets=sorted([[tp.partition, tp.offset] for tp in positions]))
committed_reader.close()
