// Preloaded (`node --import loopback.mjs …`) into the Node servers that
// `cargo xtask conformance` starts. Servers that listen on a port without
// naming a host listen on every interface; this makes them listen on
// 127.0.0.1 only. Our own test code: it changes nothing else.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first, second] = args;
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  if (isPort && typeof second !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && !('path' in first) && first.host === undefined) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
