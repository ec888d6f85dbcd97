"""librdkafka (python3-confluent-kafka) against the Kafka listener; prints one JSON line per step.

Usage: librdkafka-client.py BROKER TOPIC
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

broker, topic = sys.argv[1], sys.argv[2]
base = {'bootstrap.servers': broker}


def out(step, **kv):
    print(json.dumps({'step': step, **kv}), flush=True)


admin = AdminClient(base)
for t, f in admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1, config={'retention.ms': '3600000'})]).items():
    f.result()
out('created')
configs = {k: v.value for k, v in next(iter(admin.describe_configs([ConfigResource('topic', topic)]).values())).result().items()}
out('configs', retention=configs['retention.ms'], cleanup=configs['cleanup.policy'])

for acks in ['0', '1', 'all']:
    p = Producer({**base, 'acks': acks, 'linger.ms': 2})
    errors = []
    for i in range(100):
        p.produce(topic, key=f'{acks}-{i}', value=f'v-{acks}-{i}', partition=i % 6, on_delivery=lambda e, m: errors.append(str(e)) if e else None)
    p.flush(15)
    out(f'produced-{acks}', errors=errors)

p = Producer({**base, 'enable.idempotence': True, 'linger.ms': 2})
delivered = []
for i in range(300):
    p.produce(topic, key=f'idem-{i}', value=b'x' * 1024, partition=i % 6, on_delivery=lambda e, m: delivered.append((m.partition(), m.offset())) if not e else None)
p.flush(15)
out('idempotent', delivered=len(delivered), unique=len(set(delivered)))


def consumer(group, **extra):
    return Consumer({**base, 'group.id': group, 'auto.offset.reset': 'earliest', 'enable.auto.commit': False,
                     'session.timeout.ms': 6000, 'heartbeat.interval.ms': 300, 'fetch.wait.max.ms': 100, **extra})


# A group of three: every member gets partitions, together all six; one leaves, two take over.
members = [consumer('rd-three') for _ in range(3)]
for c in members:
    c.subscribe([topic])
counts = [0, 0, 0]


def settle(active, want, deadline):
    while time.time() < deadline:
        for i in active:
            m = members[i].poll(0.05)
            if m is not None and not m.error():
                counts[i] += 1
        parts = [sorted(tp.partition for tp in members[i].assignment()) for i in active]
        if all(parts) and sorted(sum(parts, [])) == want:
            return parts
    return None


out('three', assignments=settle([0, 1, 2], list(range(6)), time.time() + 30))
members[2].close()
out('two', assignments=settle([0, 1], list(range(6)), time.time() + 30))
for c in members[:2]:
    c.close()

# Commit and resume, then seek.
c = consumer('rd-resume')
c.assign([TopicPartition(topic, 0, 0)])
seen = []
while len(seen) < 10:
    m = c.poll(5)
    if m is None:
        break
    if not m.error():
        seen.append(m.offset())
c.commit(offsets=[TopicPartition(topic, 0, seen[-1] + 1)], asynchronous=False)
committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
c.close()
c = consumer('rd-resume')
c.assign([TopicPartition(topic, 0, -1000)])  # OFFSET_STORED: resume from the committed offset
m = c.poll(10)
resumed = m.offset() if m is not None and not m.error() else None
c.seek(TopicPartition(topic, 0, 2))
m = c.poll(10)
sought = m.offset() if m is not None and not m.error() else None
c.close()
out('resume', first=seen[:3], committed=committed, resumed=resumed, sought=sought)

low, high = Consumer({**base, 'group.id': 'rd-wm'}).get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
out('watermarks', low=low, high=high)

for t, f in admin.create_partitions([NewPartitions(topic, 8)]).items():
    f.result()
md = admin.list_topics(topic, timeout=10)
out('partitions', count=len(md.topics[topic].partitions))
for t, f in admin.delete_topics([topic]).items():
    f.result()
out('deleted', exists=topic in admin.list_topics(timeout=10).topics)
