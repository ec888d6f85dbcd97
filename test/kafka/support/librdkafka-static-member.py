"""One static member (group.instance.id) of a classic group, until killed; prints one JSON line per event.

Usage: librdkafka-static-member.py BROKER TOPIC GROUP INSTANCE_ID
Events: assign / revoke (the partitions), committed (offset 1 committed for each assigned
partition, with the instance id: OffsetCommit v7), error.
"""
import json
import sys

from confluent_kafka import Consumer, TopicPartition

broker, topic, group, instance = sys.argv[1:5]


def out(event, **kv):
    print(json.dumps({'event': event, **kv}), flush=True)


c = Consumer({'bootstrap.servers': broker, 'group.id': group, 'group.instance.id': instance,
              'session.timeout.ms': 10000, 'heartbeat.interval.ms': 300, 'enable.auto.commit': False,
              'auto.offset.reset': 'earliest'})
pending = []


def on_assign(consumer, partitions):
    out('assign', partitions=sorted(p.partition for p in partitions))
    pending[:] = [p.partition for p in partitions]


c.subscribe([topic], on_assign=on_assign,
            on_revoke=lambda consumer, partitions: out('revoke', partitions=sorted(p.partition for p in partitions)))
while True:
    m = c.poll(0.1)
    if m is not None and m.error():
        out('error', error=str(m.error()))
    if pending:
        try:
            c.commit(offsets=[TopicPartition(topic, p, 1) for p in pending], asynchronous=False)
            out('committed', partitions=sorted(pending))
        except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
            out('error', error=str(e))
        pending.clear()
