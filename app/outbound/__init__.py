"""Calls to URLs a caller gave (callbacks, pre-signed result PUTs): the one seam through which
Folio talks to a server it does not run. A name is resolved once, checked, and the checked
address is the one connected to; a reply is read up to a few KiB and closed; every call has a
total deadline, not only a timeout per read."""
