import { Admin, type AdminConfig } from './admin.js';
import { Consumer, type ConsumerConfig } from './consumer/consumer.js';
import { Producer, type ProducerConfig } from './producer/producer.js';
import { ShareConsumer, type ShareConsumerConfig } from './share-consumer.js';
import { Transport, type ConnectionConfig } from './transport.js';

/**
 * The entry point, shaped like kafkajs's `Kafka`: one connection config, then producers, consumers
 * and admin clients sharing it.
 *
 *   const kafka = new Kafka({ url: 'http://127.0.0.1:8080' });
 *   const producer = kafka.producer();
 *   await producer.send({ topic: 'orders', messages: [{ key: 'alice', value: '42' }] });
 */
export class Kafka {
  readonly transport: Transport;

  constructor(readonly config: ConnectionConfig) {
    this.transport = new Transport(config);
  }

  producer(config: ProducerConfig = {}): Producer {
    return new Producer(this.transport, config);
  }

  consumer(config: ConsumerConfig = {}): Consumer {
    return new Consumer(this.transport, { clientId: this.config.clientId, ...config });
  }

  /** A share group consumer (KIP-932), in the shape of Java's KafkaShareConsumer. */
  shareConsumer(config: ShareConsumerConfig): ShareConsumer {
    return new ShareConsumer(this.transport, config);
  }

  admin(config: AdminConfig = {}): Admin {
    return new Admin(this.transport, config);
  }
}
