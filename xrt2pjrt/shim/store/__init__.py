"""The key-value store every rendezvous of the shim meets in: authenticated, standard library only.

Why not torch.distributed's TCPStore as it is: it accepts any connection (a stranger's
forged arrival comes back from a rendezvous as a payload), lets a second job on the same
port read and write the first job's keys, resets the connection on values over 8 MiB,
overruns a 30 s timeout to 126 s with its reconnect back-off, and its C++ client warns on
every call once the server is gone. This store:

* authenticates both ends of every connection with the job's secret (HMAC-SHA256 over fresh
  nonces from each side; the secret never travels), so a process without it can neither
  read nor write a key, and a client never talks to another job's store;
* binds exactly the address it is given (loopback when every replica is local) and fails
  at once, naming the port, when the port is taken;
* waits on the server side, so a client's timeout is a deadline for the whole call,
  connecting included;
* takes values up to ``XRT2PJRT_STORE_MAX_BYTES`` (default 1 GiB) and names that limit when a
  value is larger;
* carries the job's fate: ``abort(message)`` ends every wait at once with that message, and
  each process says ``done`` as it exits, so a store served by a helper process of its own
  stays up until the job's last process has finished with it.

Payloads travel unencrypted, like gloo's and XLA's own traffic between hosts.

The rooms: ``protocol`` (the handshake, frames, the errors and the value limit), ``secret``
(the job's secret), ``server``, ``client``, ``helper`` (a server in a process of its own).
Importing this package imports none of them.
"""
