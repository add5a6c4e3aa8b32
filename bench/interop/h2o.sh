start_h2o() { return 1; }; count_h2o() { echo 0; }
