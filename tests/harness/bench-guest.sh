echo bench
