"""The key-value store every rendezvous of the shim meets in: torch's TCPStore, made the job's own.

The server is ``torch.distributed.TCPStore`` with its libuv engine (one event loop serves
every connection: at 1,024 processes the store costs what a bare TCPStore costs, where the
own Python server with a thread per connection cost 45 times as much). As it is, TCPStore
lets any connection read and write every key (a stranger's forged arrival comes back from
a rendezvous as a payload), binds every interface, resets the connection on values over
8 MiB, overruns a 30 s timeout to 126 s with its reconnect back-off, and its C++ client
warns on every call once the server is gone. Around it:

* the job's secret makes the keys the job's (``protocol.KeySpace``): every key lives under
  a namespace derived from the secret, and every value carries an HMAC-SHA256 over its key
  and bytes, checked on read, so a value the job did not write is refused
  (``StoreAuthenticationError``), never returned; a client of another job (another secret)
  finds no hello under its namespace and is refused at once;
* the server binds exactly the address it is given (loopback when every replica is local)
  on a socket of its own that the engine takes as it is, and fails at once, naming the
  port, when the port is taken or the address is not this machine's (never every
  interface instead);
* the client (standard library only) speaks TCPStore's wire protocol itself, so a client's
  timeout is a deadline for the whole call, connecting included;
* values up to ``XRT2PJRT_STORE_MAX_BYTES`` (default 1 GiB; the client names the limit,
  its own or the server's) travel in chunks of 4 MiB;
* it carries the job's fate: ``abort(message)`` ends every wait at once with that message
  (each process keeps one connection waiting on the abort key, so waiting costs the store
  nothing), and each process says ``done`` as it exits, so a store served by a helper
  process of its own stays up until the job's last process has finished with it;
* strangers can reach the port, so the helper does not let them keep it (an idle
  connection keeps nothing up past a wait's length), print into the job's output (the
  engine's warnings on malformed requests) or fill the host's memory (past four values of
  the largest size, the job is aborted, saying so, and the store ends).

Payloads travel unencrypted, like gloo's and XLA's own traffic between hosts; someone who
reads the wire learns the namespace and can delete keys or move a counter (counters are
bare numbers, as TCPStore keeps them; they order a rendezvous but never carry a payload),
but cannot make the job accept a value it did not write.

The rooms: ``protocol`` (TCPStore's wire, the key space and its seals, the errors and the
value limit), ``secret`` (the job's secret), ``server``, ``client``, ``helper`` (a server in
a process of its own). Importing this package imports none of them; only ``server``
imports torch.
"""
