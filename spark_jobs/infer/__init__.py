"""``contract infer``: a draft contract from one sample file, read as a stream."""
