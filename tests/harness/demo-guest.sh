echo "demo"
