"""librdkafka producer for `npm run bench:kafka`: N records of SIZE bytes to TOPIC, acks=all.

Prints one JSON line: records, seconds, records/s, delivery errors, the partitions the records
went to. The topic must exist.
Usage: kafka-producer.py BROKER TOPIC PARTITIONS N SIZE [tuned|defaults]

tuned (the default): linger.ms 10, batch.size 1 MB, a large queue, record i to partition i % PARTITIONS.
defaults: librdkafka's own configuration (acks all, linger.ms 5, batch.size 1,000,000 B,
batch.num.messages 10,000, queue of 100,000 messages) and keyless records on its default
partitioner (consistent_random: sticky for keyless records, a new partition every 10 ms).
"""
import json
import sys
import time

from confluent_kafka import Producer

broker, topic, partitions, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
mode = sys.argv[6] if len(sys.argv) > 6 else 'tuned'
if mode == 'tuned':
    p = Producer({'bootstrap.servers': broker, 'acks': 'all', 'linger.ms': 10, 'batch.size': 1000000,
                  'queue.buffering.max.kbytes': 2097151, 'queue.buffering.max.messages': 2000000})
elif mode == 'defaults':
    p = Producer({'bootstrap.servers': broker})
else:
    sys.exit(f'unknown mode {mode}')
value = b'x' * size
errors = [0]
used = set()


def delivered(e, m):
    if e:
        errors[0] += 1
    else:
        used.add(m.partition())


def produce(i):
    if mode == 'tuned':
        p.produce(topic, value=value, partition=i % partitions, on_delivery=delivered)
    else:
        p.produce(topic, value=value, on_delivery=delivered)


def send(count, offset):
    for i in range(count):
        while True:
            try:
                produce(offset + i)
                break
            except BufferError:
                p.poll(0.005)
        if i % 2000 == 0:
            p.poll(0)
    p.flush(120)


send(min(20000, n // 10), 0)  # warm-up: connections, metadata, the JIT of the server
used.clear()
start = time.time()
send(n, 0)
seconds = time.time() - start
print(json.dumps({'records': n, 'seconds': seconds, 'recordsPerSecond': n / seconds, 'errors': errors[0],
                  'partitionsUsed': len(used)}))
