from offline_eval.cli import main

main()
