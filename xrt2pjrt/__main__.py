from xrt2pjrt.cli import main

main()
