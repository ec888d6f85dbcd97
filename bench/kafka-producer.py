"""librdkafka producer for `npm run bench:kafka`: N records of SIZE bytes to TOPIC, acks=all.

Prints one JSON line: records, seconds, records/s, delivery errors. The topic must exist.
Usage: kafka-producer.py BROKER TOPIC PARTITIONS N SIZE
"""
import json
import sys
import time

from confluent_kafka import Producer

broker, topic, partitions, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p = Producer({'bootstrap.servers': broker, 'acks': 'all', 'linger.ms': 10, 'batch.size': 1000000,
              'queue.buffering.max.kbytes': 2097151, 'queue.buffering.max.messages': 2000000})
value = b'x' * size
errors = [0]


def delivered(e, m):
    if e:
        errors[0] += 1


def send(count, offset):
    for i in range(count):
        while True:
            try:
                p.produce(topic, value=value, partition=(offset + i) % partitions, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.005)
        if i % 2000 == 0:
            p.poll(0)
    p.flush(120)


send(min(20000, n // 10), 0)  # warm-up: connections, metadata, the JIT of the server
start = time.time()
send(n, 0)
seconds = time.time() - start
print(json.dumps({'records': n, 'seconds': seconds, 'recordsPerSecond': n / seconds, 'errors': errors[0]}))
