"""librdkafka (python3-confluent-kafka) over SASL_SSL: produce and consume; prints one JSON line.

Usage: librdkafka-sasl-ssl.py BROKER CA_FILE MECHANISM USER PASSWORD TOPIC
"""
import json
import sys

from confluent_kafka import Consumer, Producer

broker, ca, mechanism, user, password, topic = sys.argv[1:7]
base = {
    'bootstrap.servers': broker,
    'security.protocol': 'SASL_SSL',
    'ssl.ca.location': ca,
    'sasl.mechanisms': mechanism,
    'sasl.username': user,
    'sasl.password': password,
}
errors = []
p = Producer({**base, 'linger.ms': 2})
for i in range(10):
    p.produce(topic, value=f'py-{i}', partition=0, on_delivery=lambda e, m: errors.append(str(e)) if e else None)
left = p.flush(15)
c = Consumer({**base, 'group.id': 'py-sasl-ssl', 'auto.offset.reset': 'earliest', 'enable.auto.commit': False})
c.subscribe([topic])
seen = []
for _ in range(100):
    m = c.poll(0.2)
    if m is not None and not m.error():
        seen.append(m.value().decode())
    if sum(v.startswith('py-') for v in seen) >= 10:
        break
c.close()
print(json.dumps({'errors': errors, 'unflushed': left, 'seen': [v for v in seen if v.startswith('py-')]}), flush=True)
