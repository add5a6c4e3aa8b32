start_haproxy() { return 1; }; count_haproxy() { echo 0; }
start_haproxy_proxy() { return 1; }; count_haproxy_proxy() { echo 0; }
