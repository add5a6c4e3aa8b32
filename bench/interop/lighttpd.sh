start_lighttpd() { return 1; }; count_lighttpd() { echo 0; }
